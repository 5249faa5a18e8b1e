# tg_add_plugin(<name> SOURCES <files...> [OUTPUT_DIRECTORY <dir>] [DEVICES <DEV names...>]
#               [REQUIRES <system libraries...>] [PRIORITY <n>] [OLDEST_CORE_MINOR <m>])
# builds libtg_plugin_<name>.so, the shared object the tg core discovers at run time, writes the manifest beside it
# (libtg_plugin_<name>.manifest: what `tg devices` learns without loading the plugin) and installs both into
# <prefix>/lib/tg/plugins. DEVICES defaults to the upper-cased name; REQUIRES lists libraries the plugin dlopens
# (the core reports a missing one with the loader's message instead of loading the plugin); the highest PRIORITY
# wins among plugins for one DEV name; OLDEST_CORE_MINOR is the oldest core minor the entry point serves (0).
#
# One definition serves both builds: the tg tree includes this file from sdk/CMakeLists.txt, and the installed
# package (find_package(tg_sdk CONFIG)) includes its installed copy. Either way the target `tg::sdk` must exist.
include_guard(GLOBAL)

# The linker version script beside this file: it keeps tg_plugin_get_api the plugin's only exported symbol.
# (a cache entry: plugins are added from sibling directories of the one that included this file)
set(TG_SDK_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/tg_plugin.map" CACHE INTERNAL "tg plugin linker version script")

# The ABI version of the headers plugins compile against (in the tg tree sdk/include; installed, <prefix>/include).
foreach(candidate "${CMAKE_CURRENT_LIST_DIR}/../include/tg/plugin_abi.h"
                  "${CMAKE_CURRENT_LIST_DIR}/../../../include/tg/plugin_abi.h")
  if(EXISTS "${candidate}")
    file(STRINGS "${candidate}" _tg_abi_lines REGEX "^#define TG_ABI_VERSION_(MAJOR|MINOR) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+)u.*" "\\1" _tg_abi_major "${_tg_abi_lines}")
    string(REGEX REPLACE ".*MINOR ([0-9]+)u.*" "\\1" _tg_abi_minor "${_tg_abi_lines}")
    set(TG_SDK_ABI_MAJOR "${_tg_abi_major}" CACHE INTERNAL "tg plugin ABI major of the SDK headers")
    set(TG_SDK_ABI_MINOR "${_tg_abi_minor}" CACHE INTERNAL "tg plugin ABI minor of the SDK headers")
    # a new version in the header reconfigures (the manifests and the tests' expectations are written from it)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${candidate}")
    break()
  endif()
endforeach()
if(NOT TG_SDK_ABI_MAJOR MATCHES "^[0-9]+$" OR NOT TG_SDK_ABI_MINOR MATCHES "^[0-9]+$")
  message(FATAL_ERROR "tg_add_plugin: cannot read the ABI version from tg/plugin_abi.h beside ${CMAKE_CURRENT_LIST_DIR}")
endif()

function(tg_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY;PRIORITY;OLDEST_CORE_MINOR" "SOURCES;DEVICES;REQUIRES" ${ARGN})
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
  if(DEFINED TG_WARNINGS)  # the tg tree's warnings (errors with TG_WERROR); an outside project picks its own
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

  # The manifest (format: sdk/README.md, "Manifests and discovery").
  if(NOT ARG_DEVICES)
    string(TOUPPER "${name}" ARG_DEVICES)
  endif()
  if(NOT DEFINED ARG_PRIORITY)
    set(ARG_PRIORITY 0)
  endif()
  if(NOT DEFINED ARG_OLDEST_CORE_MINOR)
    set(ARG_OLDEST_CORE_MINOR 0)
  endif()
  set(quoted_devices "")
  foreach(d IN LISTS ARG_DEVICES)
    list(APPEND quoted_devices "\"${d}\"")
  endforeach()
  set(quoted_requires "")
  foreach(r IN LISTS ARG_REQUIRES)
    list(APPEND quoted_requires "\"${r}\"")
  endforeach()
  list(JOIN quoted_devices ", " quoted_devices)
  list(JOIN quoted_requires ", " quoted_requires)
  set(manifest "${out_dir}/libtg_plugin_${name}.manifest")
  file(GENERATE OUTPUT "${manifest}" CONTENT
"# tg plugin manifest, written by tg_add_plugin: what tg reads about libtg_plugin_${name}.so without loading it
plugin = \"${name}\"
devices = [${quoted_devices}]
abi = \"${TG_SDK_ABI_MAJOR}.${ARG_OLDEST_CORE_MINOR}-${TG_SDK_ABI_MAJOR}.${TG_SDK_ABI_MINOR}\"
requires = [${quoted_requires}]
priority = ${ARG_PRIORITY}
")
  install(FILES "${manifest}" DESTINATION lib/tg/plugins COMPONENT tg_plugins)
endfunction()
