// IR dumps and the timing report go to stderr in MLIR's formats; stdout keeps only the IR.

// RUN: onnxc-opt %s -p cse,dce --mlir-print-ir-after-all 2>%t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --input-file=%t.err --check-prefix=AFTER
// RUN: onnxc-opt %s -p cse,dce --mlir-print-ir-before-all 2>&1 >/dev/null | filecheck %s --check-prefix=BEFORE
// RUN: onnxc-opt %s -p cse,dce --mlir-print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE
// RUN: onnxc-opt %s -p cse,dce --mlir-timing 2>%t.time | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --input-file=%t.time --check-prefix=TIMING
// RUN: onnxc-opt %s -p cse --time-passes 2>&1 >/dev/null | filecheck %s --check-prefix=TIMING

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// OUT-NOT:     IR Dump
// OUT-NOT:     Execution time report
// OUT:         builtin.module {
// OUT-NOT:     IR Dump
// OUT-NOT:     Execution time report

// AFTER:       // -----// IR Dump After CsePass (cse) //----- //
// AFTER-NEXT:  builtin.module {
// AFTER:         %1 = graph.add(%0, %0)
// AFTER:       // -----// IR Dump After DeadCodeElimination (dce) //----- //
// AFTER-NEXT:  builtin.module {

// BEFORE:      // -----// IR Dump Before CsePass (cse) //----- //
// BEFORE:        %1 = graph.relu(%x)
// BEFORE:      // -----// IR Dump Before DeadCodeElimination (dce) //----- //
// BEFORE-NOT:  IR Dump After

// dce finds nothing left to remove after cse, so only cse's dump is printed
// CHANGE:      IR Dump After CsePass (cse)
// CHANGE-NOT:  IR Dump

// TIMING:      ... Execution time report ...
// TIMING:      Total Execution Time: {{[0-9.]+}} seconds
// TIMING:      ----Wall Time----  ----Name----
// TIMING:      Parser
// TIMING:      CsePass (cse)
// TIMING:      Output
// TIMING:      {{[0-9.]+}} (100.0%)  Total
