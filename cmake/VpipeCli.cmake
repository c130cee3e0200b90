# The vpipe command line: a thin caller of the public API of the two libraries. Its parts
# (everything but main.c) are a static library that the installed binary links with the
# public libraries and the tests link with vpipe_internal.
file(GLOB VP_CLI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cli/*.c)
list(REMOVE_ITEM VP_CLI_SOURCES ${PROJECT_SOURCE_DIR}/cli/main.c)
add_library(vpipe_cli_parts STATIC ${VP_CLI_SOURCES})
target_include_directories(vpipe_cli_parts PUBLIC ${PROJECT_SOURCE_DIR}/cli
                           ${PROJECT_SOURCE_DIR}/include ${VP_GENERATED_INCLUDE})
target_link_libraries(vpipe_cli_parts PUBLIC PkgConfig::JANSSON Threads::Threads)

add_executable(vpipe_cli ${PROJECT_SOURCE_DIR}/cli/main.c)
set_target_properties(vpipe_cli PROPERTIES OUTPUT_NAME vpipe
                      INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
target_link_libraries(vpipe_cli PRIVATE vpipe_cli_parts vpipe_runtime vpipe)
