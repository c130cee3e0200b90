# Installation: `cmake --install BUILD --prefix P` puts
#   P/bin/vpipe                                   the command line (with VP_RUNTIME)
#   P/lib/libvpipe.so.*, libvpipe-runtime.so.*    the libraries (or .a without BUILD_SHARED_LIBS)
#   P/include/vpipe/*.h                           the headers, version.h generated
#   P/lib/pkgconfig/vpipe.pc, vpipe-runtime.pc    pkg-config: the schedule library, and the
#                                                 runtime on top of it (Requires: vpipe)
#   P/lib/cmake/vpipe/                            find_package(vpipe): vpipe::vpipe and,
#                                                 when built, vpipe::runtime
# and `cmake --build BUILD --target wheel` makes BUILD/dist/vpipe-VERSION-py3-none-PLATFORM.whl,
# the Python package carrying libvpipe.so.0 (see the end of this file).
include(CMakePackageConfigHelpers)

set(VP_INSTALL_TARGETS vpipe)
if(VP_RUNTIME)
  list(APPEND VP_INSTALL_TARGETS vpipe_runtime)
  install(TARGETS vpipe_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(TARGETS ${VP_INSTALL_TARGETS} EXPORT vpipeTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vpipe ${VP_GENERATED_INCLUDE}/vpipe
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# pkg-config. The files find their prefix from where they lie (${pcfiledir}), so an
# installation can move. Only a static build lists the dependencies (for `pkg-config
# --static`): a shared library brings its own, and a run path to the libraries' folder, so
# that a program built with `pkg-config --libs` runs without LD_LIBRARY_PATH.
set(VP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vpipe)
file(RELATIVE_PATH VP_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" VP_PC_TO_PREFIX "${VP_PC_TO_PREFIX}")
set(VP_PC_REQUIRES_PRIVATE "")
set(VP_PC_RUNTIME_REQUIRES_PRIVATE "")
set(VP_PC_LIBS_PRIVATE "")
set(VP_PC_RPATH "")
if(BUILD_SHARED_LIBS)
  set(VP_PC_RPATH " -Wl,-rpath,\${libdir}")
else()
  set(VP_PC_REQUIRES_PRIVATE "jansson")
  set(VP_PC_RUNTIME_REQUIRES_PRIVATE "openblas jansson")
  if(MPI_C_FOUND)
    string(APPEND VP_PC_RUNTIME_REQUIRES_PRIVATE " mpi-c")
  endif()
  set(VP_PC_LIBS_PRIVATE "-lm -pthread")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/vpipe.pc.in ${PROJECT_BINARY_DIR}/vpipe.pc @ONLY)
set(VP_PC_FILES ${PROJECT_BINARY_DIR}/vpipe.pc)
if(VP_RUNTIME)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/vpipe-runtime.pc.in
                 ${PROJECT_BINARY_DIR}/vpipe-runtime.pc @ONLY)
  list(APPEND VP_PC_FILES ${PROJECT_BINARY_DIR}/vpipe-runtime.pc)
endif()
install(FILES ${VP_PC_FILES} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package.
install(EXPORT vpipeTargets NAMESPACE vpipe:: DESTINATION ${VP_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vpipeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vpipeConfig.cmake
                              INSTALL_DESTINATION ${VP_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vpipeConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vpipeConfig.cmake ${PROJECT_BINARY_DIR}/vpipeConfigVersion.cmake
        DESTINATION ${VP_CMAKE_DIR})

# The Python wheel that carries the library: made by the package's own build backend
# (python/_build/backend.py, the standard library only) from the built libvpipe, whose
# run path is $ORIGIN. Not for sanitizer builds, whose library a plain Python cannot load.
if(BUILD_SHARED_LIBS AND NOT VP_SANITIZE AND NOT VP_TSAN AND NOT VP_FUZZ)
  find_package(Python3 3.9 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    # The interpreter itself, not a launcher such as pyenv's shim, which needs the
    # environment it was found in.
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sys; print(sys.executable)"
                    OUTPUT_VARIABLE VP_WHEEL_PYTHON OUTPUT_STRIP_TRAILING_WHITESPACE)
    add_custom_target(wheel
      COMMAND ${CMAKE_COMMAND} -E rm -rf ${PROJECT_BINARY_DIR}/dist
      COMMAND ${VP_WHEEL_PYTHON} ${PROJECT_SOURCE_DIR}/python/_build/backend.py wheel
              ${PROJECT_BINARY_DIR}/dist --library $<TARGET_FILE:vpipe> --version ${PROJECT_VERSION}
      COMMENT "The Python wheel with libvpipe in dist/"
      VERBATIM)
    add_dependencies(wheel vpipe)
  else()
    message(STATUS "No Python >= 3.9: no `wheel` target")
  endif()
endif()
