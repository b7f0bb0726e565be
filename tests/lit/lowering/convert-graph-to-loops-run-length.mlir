// RUN: onnxc-opt %s -p convert-graph-to-loops | filecheck %s

// A while loop with a `trip_symbol` returns rows of run-time length (control_flow.py): the
// symbol is a run symbol (graph_dynamic.py), the last entry of the entry's `dims` buffer
// (`onnxc.run_symbols`, without a bound), read as the rows the caller allocated (the
// store-slice kernel clamps into them). Once the loop stopped, its count goes through a
// capacity check (a larger count stops the run: the caller runs again with room), is
// stored back into `dims` for the caller to cut the output, and is the symbol's value for
// whatever comes after.

// CHECK-LABEL: func.func @main(%x: memref<4xf32>, %limit: memref<f32>, %out0: memref<?xf32>, %out1: memref<4xf32>, %dims: memref<1xi64>)
// CHECK-SAME:    onnxc.check_sites = [{kind = "capacity", node = "", op_type = "graph.loop", operand = "n"}]
// CHECK-SAME:    onnxc.symbols = ["n"], onnxc.dims_argument = 4 : i64, onnxc.run_symbols = ["n"], onnxc.run_bounds = [""]
// CHECK:         %[[ROWS:.*]] = memref.load %dims[%{{.*}}] : memref<1xi64>
// CHECK-NEXT:    %n = arith.index_cast %[[ROWS]] : i64 to index
// CHECK:         %[[COUNT:.*]] = scf.while
// CHECK:           func.call @store_slice_0(%out1, %iteration, %out0, %n, %{{.*}})
// CHECK:           scf.yield
// CHECK-NEXT:    }
// CHECK:         memref.store %[[COUNT]], %[[CELL:.*]][%{{.*}}] : memref<1xi64>
// CHECK:         func.call @check_capacity_0(%[[CELL]], %status, %n) {onnxc.check_site = 0 : i64
// CHECK:         memref.store %[[COUNT]], %dims[%{{.*}}] : memref<1xi64>
// CHECK-NEXT:    %[[DEFINED:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK:         func.return

func.func @main(%x: tensor<4xf32>, %limit: tensor<f32>) -> (tensor<?x4xf32, #graph.dims<["n"]>>, tensor<4xf32>) {
  %max = graph.constant {value = dense<1000> : tensor<i64>} : tensor<i64>
  %go = graph.constant {value = dense<true> : tensor<i1>} : tensor<i1>
  %final, %rows = graph.loop(%max, %go, %x) {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<4xf32>):
    %b = graph.mul_scalar(%a) {scalar = 2.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
    %s = graph.reduce_sum(%b) {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4xf32>) -> tensor<f32>
    %more = graph.less(%s, %limit) : (tensor<f32>, tensor<f32>) -> tensor<i1>
    graph.yield %more, %b, %a : tensor<i1>, tensor<4xf32>, tensor<4xf32>
  } {trip_symbol = "n"} : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> (tensor<4xf32>, tensor<?x4xf32, #graph.dims<["n"]>>)
  func.return %rows, %final : tensor<?x4xf32, #graph.dims<["n"]>>, tensor<4xf32>
}
