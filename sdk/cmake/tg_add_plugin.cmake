# tg_add_plugin(<name> SOURCES <files...> [OUTPUT_DIRECTORY <dir>]): builds libtg_plugin_<name>.so, the shared
# object the tg core discovers at run time, and installs it into <prefix>/lib/tg/plugins.
#
# One definition serves both builds: the tg tree includes this file from sdk/CMakeLists.txt, and the installed
# package (find_package(tg_sdk CONFIG)) includes its installed copy. Either way the target `tg::sdk` must exist.
include_guard(GLOBAL)

# The linker version script beside this file: it keeps tg_plugin_get_api the plugin's only exported symbol.
# (a cache entry: plugins are added from sibling directories of the one that included this file)
set(TG_SDK_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/tg_plugin.map" CACHE INTERNAL "tg plugin linker version script")

function(tg_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tg_add_plugin(${name}): no SOURCES given")
  endif()
  if(NOT TARGET tg::sdk)
    message(FATAL_ERROR "tg_add_plugin(${name}): target tg::sdk is missing; call find_package(tg_sdk CONFIG) first")
  endif()
  # Where the .so lands in the build tree: the caller's choice, else the tg tree's plugin directory, else the
  # same relative place (lib/tg/plugins) under this project's build directory, so TG_PLUGIN_PATH can name it.
  set(out_dir "${ARG_OUTPUT_DIRECTORY}")
  if(NOT out_dir AND DEFINED TG_PLUGIN_OUTPUT_DIR)
    set(out_dir "${TG_PLUGIN_OUTPUT_DIR}")
  elseif(NOT out_dir)
    set(out_dir "${CMAKE_BINARY_DIR}/lib/tg/plugins")
  endif()

  set(target tg_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE tg::sdk)
  if(DEFINED TG_WARNINGS)  # the tg tree's -Wall -Wextra -Werror; an outside project picks its own
    target_compile_options(${target} PRIVATE ${TG_WARNINGS})
  endif()
  # Hidden visibility alone leaves libstdc++'s weak template instances exported; the script hides them too.
  target_link_options(${target} PRIVATE "LINKER:--version-script=${TG_SDK_PLUGIN_MAP}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${TG_SDK_PLUGIN_MAP}")
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY "${out_dir}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    # An installed plugin must still find libraries it links from outside the system path (LLVM for the CPU).
    INSTALL_RPATH_USE_LINK_PATH ON)
  # lib/tg/plugins under the prefix is where the core looks after TG_PLUGIN_PATH.
  install(TARGETS ${target} LIBRARY DESTINATION lib/tg/plugins COMPONENT tg_plugins)
endfunction()
