# sdk_out_of_tree_interp (cmake -P): a plugin author's path, checked end to end.
#  1. cmake --install the tg build's SDK component into WORK_DIR/prefix (not the source tree);
#  2. configure and build sdk/examples/interp as a separate project against that prefix only;
#  3. check the pkg-config file describes the prefix (when pkg-config is installed);
#  4. `tg devices` with TG_PLUGIN_PATH naming the new plugin's directory lists INTERP from that file;
#  5. sdk_consume_test runs a Tensor program on DEV INTERP through that file;
#  6. the installed tg-conformance passes the out-of-tree plugin (no rebuild against tg sources).
# Inputs (-D): TG_SOURCE_DIR TG_BUILD_DIR WORK_DIR TG_EXE CONSUME_TEST GENERATOR CXX_COMPILER PKG_CONFIG.
cmake_minimum_required(VERSION 3.25)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/interp-build)
file(REMOVE_RECURSE ${WORK_DIR})

run("installing the SDK" ${CMAKE_COMMAND} --install ${TG_BUILD_DIR} --prefix ${prefix} --component tg_sdk)
foreach(f include/tg/plugin_abi.h include/tg/sdk/plugin.hpp lib/cmake/tg_sdk/tg_sdkConfig.cmake bin/tg-conformance
          lib/cmake/tg_sdk/tg_add_plugin.cmake lib/cmake/tg_sdk/tg_plugin.map lib/pkgconfig/tg_sdk.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install did not put ${f} under ${prefix}")
  endif()
endforeach()

# Only the installed prefix is visible to the example: no tg source or build directory on any search path.
run("configuring sdk/examples/interp out of tree" ${CMAKE_COMMAND} -S ${TG_SOURCE_DIR}/sdk/examples/interp -B ${build}
    -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/plugin-prefix)
run("building sdk/examples/interp" ${CMAKE_COMMAND} --build ${build})
set(plugin_dir ${build}/lib/tg/plugins)
if(NOT EXISTS ${plugin_dir}/libtg_plugin_interp.so)
  message(FATAL_ERROR "the out-of-tree build made no ${plugin_dir}/libtg_plugin_interp.so")
endif()
# Its install rule puts the plugin where a core installed at that prefix looks: lib/tg/plugins.
run("installing the plugin" ${CMAKE_COMMAND} --install ${build})
if(NOT EXISTS ${WORK_DIR}/plugin-prefix/lib/tg/plugins/libtg_plugin_interp.so)
  message(FATAL_ERROR "cmake --install of the plugin did not put it in <prefix>/lib/tg/plugins")
endif()

if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  run("pkg-config" ${PKG_CONFIG} --cflags tg_sdk)
  file(REAL_PATH ${prefix}/include include_dir)
  string(STRIP "${run_output}" cflags)
  string(REGEX REPLACE "^-I" "" cflags_dir "${cflags}")
  file(REAL_PATH "${cflags_dir}" cflags_dir)
  if(NOT cflags_dir STREQUAL include_dir)
    message(FATAL_ERROR "pkg-config --cflags tg_sdk gives '${cflags}', not -I${include_dir}")
  endif()
endif()

set(ENV{TG_PLUGIN_PATH} ${plugin_dir})
run("tg devices --explain" ${TG_EXE} devices --explain)
# read without loading: the manifest tg_add_plugin wrote from the installed SDK sits beside the .so
if(NOT EXISTS ${plugin_dir}/libtg_plugin_interp.manifest)
  message(FATAL_ERROR "the installed plugin has no manifest beside it in ${plugin_dir}")
endif()
string(FIND "${run_output}" "${plugin_dir}/libtg_plugin_interp.so\n  loaded: plugin interp, ABI ${TG_ABI}, device INTERP\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "tg devices does not list INTERP from ${plugin_dir}:\n${run_output}")
endif()
run("sdk_consume_test on DEV=INTERP" ${CONSUME_TEST})
run("the installed tg-conformance on the out-of-tree plugin" ${prefix}/bin/tg-conformance
    ${plugin_dir}/libtg_plugin_interp.so --json ${WORK_DIR}/conformance.json)
string(REGEX MATCH "[0-9]+ passed, 0 failed, [0-9]+ skipped" summary "${run_output}")
if(NOT summary)
  message(FATAL_ERROR "tg-conformance did not pass the out-of-tree plugin:\n${run_output}")
endif()
message(STATUS "tg-conformance on the out-of-tree INTERP: ${summary}")
message(STATUS "out-of-tree INTERP plugin built against ${prefix} and used through TG_PLUGIN_PATH")
