# The libraries: every module folder of src/ belongs to exactly one of them.
#
#   vpipe (libvpipe)          the schedule library: libc, libm, jansson (and pthreads when
#                             the platform has them)
#   vpipe_runtime             libvpipe-runtime, on top of vpipe: OpenBLAS, pthreads, MPI
#   (libvpipe-runtime)
#   vpipe_internal            both as one static archive with every internal (vp__) symbol,
#                             for the tests, benchmarks and fuzzers, which test internals
#
# Each library is compiled once, position-independent with hidden symbols, into an object
# library that both the installed library and vpipe_internal are made of. The public
# functions are marked VP_API (vpipe/base.h): a shared library exports them and nothing else.

set(VP_SCHEDULE_MODULES base schedule sim block families plan io render price hybrid calibrate
    request)
set(VP_RUNTIME_MODULES model data checkpoint runtime profile)

# Every folder of src/ must be listed above: a new module is not silently left out.
file(GLOB VP_MODULE_DIRS LIST_DIRECTORIES true RELATIVE ${PROJECT_SOURCE_DIR}/src
     ${PROJECT_SOURCE_DIR}/src/*)
foreach(dir ${VP_MODULE_DIRS})
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${dir} AND NOT dir IN_LIST VP_SCHEDULE_MODULES
     AND NOT dir IN_LIST VP_RUNTIME_MODULES)
    message(FATAL_ERROR "src/${dir}/ is in neither library: add it to cmake/VpipeLibraries.cmake")
  endif()
endforeach()

# The generated version header (one source: project(VERSION) in CMakeLists.txt).
set(VP_GENERATED_INCLUDE ${PROJECT_BINARY_DIR}/include)
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.h.in ${VP_GENERATED_INCLUDE}/vpipe/version.h
               @ONLY)

# vp_module_objects(TARGET EXPORT MODULES...): the object library of these modules'
# sources; with EXPORT true, a shared build exports their VP_API functions.
function(vp_module_objects target export)
  set(sources)
  foreach(module ${ARGN})
    file(GLOB_RECURSE module_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${module}/*.c)
    list(APPEND sources ${module_sources})
  endforeach()
  add_library(${target} OBJECT ${sources})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                                             C_VISIBILITY_PRESET hidden)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include ${VP_GENERATED_INCLUDE}
                                       PRIVATE ${PROJECT_SOURCE_DIR}/src)
  if(BUILD_SHARED_LIBS AND export)
    target_compile_definitions(${target} PRIVATE VP_BUILDING_SHARED=1)
  endif()
endfunction()

# vp_public_library(TARGET OBJECTS OUTPUT_NAME EXPORT_NAME): the installed library of an
# object library, with the version in its file name, the major version in its soname, and
# its headers for users in the build tree and after installation. Its run path is $ORIGIN
# in the build tree too (where both libraries also lie side by side), so the built file is
# the installed one and can go into the Python wheel as it is (CMake's build-tree run path
# would be a row of empty entries, which the loader reads as the current directory).
function(vp_public_library target objects output_name export_name)
  add_library(${target} $<TARGET_OBJECTS:${objects}>)
  add_library(vpipe::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${output_name} EXPORT_NAME ${export_name}
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                        INSTALL_RPATH "$ORIGIN" BUILD_WITH_INSTALL_RPATH ON)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${VP_GENERATED_INCLUDE}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endfunction()

vp_module_objects(vpipe_objects TRUE ${VP_SCHEDULE_MODULES})
target_link_libraries(vpipe_objects PUBLIC PkgConfig::JANSSON)
set(VP_SCHEDULE_DEPS PkgConfig::JANSSON m)
if(Threads_FOUND)
  list(APPEND VP_SCHEDULE_DEPS Threads::Threads)
endif()
vp_public_library(vpipe vpipe_objects vpipe vpipe)
target_link_libraries(vpipe PRIVATE ${VP_SCHEDULE_DEPS})
set(VP_INTERNAL_OBJECTS $<TARGET_OBJECTS:vpipe_objects>)

if(VP_RUNTIME)
  vp_module_objects(vpipe_runtime_objects TRUE ${VP_RUNTIME_MODULES})
  target_link_libraries(vpipe_runtime_objects PUBLIC PkgConfig::JANSSON PkgConfig::OPENBLAS)
  set(VP_RUNTIME_DEPS PkgConfig::OPENBLAS PkgConfig::JANSSON Threads::Threads m)
  if(MPI_C_FOUND)
    # The MPI transport (src/runtime/transport/mpi.c); without MPI it reports "built
    # without MPI".
    target_compile_definitions(vpipe_runtime_objects PRIVATE VP_HAVE_MPI=1)
    target_link_libraries(vpipe_runtime_objects PUBLIC MPI::MPI_C)
    list(APPEND VP_RUNTIME_DEPS MPI::MPI_C)
  endif()
  vp_public_library(vpipe_runtime vpipe_runtime_objects vpipe-runtime runtime)
  if(BUILD_SHARED_LIBS)
    # libvpipe exports only the public API, so the shared runtime carries its own hidden
    # copy of base's internal helpers (vp__fail, vp__grow, the atomic writer, ...).
    vp_module_objects(vpipe_base_private FALSE base)
    target_sources(vpipe_runtime PRIVATE $<TARGET_OBJECTS:vpipe_base_private>)
  endif()
  target_link_libraries(vpipe_runtime PUBLIC vpipe PRIVATE ${VP_RUNTIME_DEPS})
  list(APPEND VP_INTERNAL_OBJECTS $<TARGET_OBJECTS:vpipe_runtime_objects>)
endif()

add_library(vpipe_internal STATIC EXCLUDE_FROM_ALL ${VP_INTERNAL_OBJECTS})
target_include_directories(vpipe_internal PUBLIC ${PROJECT_SOURCE_DIR}/include
                                                 ${VP_GENERATED_INCLUDE} ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(vpipe_internal PUBLIC ${VP_SCHEDULE_DEPS} ${VP_RUNTIME_DEPS})
