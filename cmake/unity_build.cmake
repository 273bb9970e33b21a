# Unity build of solbench's libraries and executable (SOLBENCH_UNITY_BUILD=ON, which
# scripts/setup.sh passes, so the demo and CI build this way). Each target's sources
# are compiled in batches of SOLBENCH_UNITY_BATCH_SIZE (16) files, one translation unit per
# batch: the heavy headers (nlohmann/json, fmt, pybind11, CLI11) are parsed, and their
# inline functions compiled, once per batch instead of once per file. Measurements:
# bench/cold_start.md.
#
# A file whose internal names (anonymous namespace, static) repeat another file's of
# the same target cannot share a batch with it; it is listed below and compiled
# alone. A new such clash shows as a 'redefinition of' error in a unity build (CI):
# rename the helper, or add the file here.
set(SOLBENCH_UNITY_BATCH_SIZE 16 CACHE STRING "Files per translation unit in a unity build")

set(_solbench_unity_targets
  solbench_core solbench_bridge solbench_sol solbench_harness solbench_gpu
  solbench_store solbench_runset solbench_score solbench_baseline solbench_eval
  solbench_report solbench)
foreach(t ${_solbench_unity_targets})
  if(TARGET ${t})
    set_target_properties(${t} PROPERTIES
      UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${SOLBENCH_UNITY_BATCH_SIZE})
  endif()
endforeach()

# Files compiled alone: solbench_alone(folder file...), paths relative to src/folder.
function(solbench_alone folder)
  list(TRANSFORM ARGN PREPEND "${PROJECT_SOURCE_DIR}/src/${folder}/")
  set_source_files_properties(${ARGN} DIRECTORY "${PROJECT_SOURCE_DIR}/src/${folder}"
    PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
solbench_alone(core solution.cc safetensors.cc)
solbench_alone(harness worker/worker_policy.cc worker/zygote.cc)
solbench_alone(report histogram_svg.cc)
solbench_alone(cli cmd_db.cc)
