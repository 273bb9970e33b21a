// runset: evaluating a data set (`solbench run`, docs/run.md).
//
// Data flows one way, each stage a header of its own:
//
//   dataset.h     discovery in the public layout (CATEGORY/PROBLEM/, PROBLEM/, or
//                 one problem), the --category/--problem filters, each problem's
//                 workloads for the run (--max-workloads: the first N in file order)
//   solutions.h   the solution files under --solutions, matched to problems by
//                 their `definition` field; the reference as a solution
//   devices.h     the slots: --device, --gpus all|0,1 (nvidia-smi -L or
//                 CUDA_VISIBLE_DEVICES), --cpu-slots N (tests)
//   scheduler.h   one task at a time per slot, tasks handed out as slots free up
//   shard.h       --shard I/N: the (problem, workload) pairs split into N slices of
//                 about equal predicted cost, the same on every machine
//   resume.h      which (solution, workload) pairs the store already holds in the
//                 environment this run records in (probed once per device)
//   child_eval.h  one evaluation = one child `solbench eval ... --json`: a crash or
//                 hang of it cannot take the run down
//   progress.h    a live line on a terminal, plain lines otherwise
//   summary.h     per evaluation, problem, category and in all: workloads, status
//                 counts, mean SOL score; JSON and a table; the exit code
//   run.h         the engine tying them together (run_dataset), and who records
//                 the traces (run itself, or eval --db when eval has it)
#pragma once

#include "runset/child_eval.h"
#include "runset/dataset.h"
#include "runset/devices.h"
#include "runset/progress.h"
#include "runset/resume.h"
#include "runset/run.h"
#include "runset/scheduler.h"
#include "runset/shard.h"
#include "runset/solutions.h"
#include "runset/summary.h"
