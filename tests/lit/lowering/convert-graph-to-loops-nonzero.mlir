// RUN: onnxc-opt %s -p convert-graph-to-loops | filecheck %s

// graph.nonzero defines a run symbol (graph_dynamic.py): its count. The entry reads the
// symbol's capacity from `dims` (the bound, the input's 4*a elements, which the caller puts
// there), allocates the result for it, and the kernel writes the count it found into a cell
// after its result. A capacity check then stops the run if the count does not fit; the
// count goes back into `dims` for the caller, and is the symbol's value from there on: the
// reduction after it gets the count, not the capacity.

func.func @main(%x: tensor<?x4xf32, #graph.dims<["a"]>>) -> tensor<f32> {
  %nz = graph.nonzero(%x) {defines = ["count"]} : (tensor<?x4xf32, #graph.dims<["a"]>>) -> tensor<2x?xi64, #graph.dims<["count"]>>
  %f = graph.cast(%nz) : (tensor<2x?xi64, #graph.dims<["count"]>>) -> tensor<2x?xf32, #graph.dims<["count"]>>
  %s = graph.reduce_sum(%f) {axes = array<i64: 0, 1>, keepdims = 0 : i64} : (tensor<2x?xf32, #graph.dims<["count"]>>) -> tensor<f32>
  func.return %s : tensor<f32>
}

// CHECK-LABEL: func.func private @nonzero_0(
// CHECK-SAME:      %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xi64>, %[[CELL:.*]]: memref<1xi64>, %{{.*}}: index, %{{.*}}: index)
// CHECK:         memref.store %{{.*}}, %[[CELL]][%{{.*}}] : memref<1xi64>
// CHECK-LABEL: func.func @main(
// CHECK-SAME:      onnxc.check_sites = [{kind = "capacity", node = "", op_type = "graph.nonzero", operand = "count"}]
// CHECK-SAME:      onnxc.symbols = ["a", "count"], onnxc.dims_argument = 2 : i64, onnxc.run_symbols = ["count"], onnxc.run_bounds = ["4*a"]
// CHECK:         %count = arith.index_cast %{{.*}} : i64 to index
// CHECK:         %nz = memref.alloc(%{{.*}}) {onnxc.elements = "2*count"} : memref<?xi64>
// CHECK:         func.call @nonzero_0(%x, %nz, %[[C:.*]], %a, %count)
// CHECK:         %[[N:.*]] = memref.load %[[C]][%{{.*}}] : memref<1xi64>
// CHECK:         func.call @check_capacity_0(%[[C]], %status, %count) {onnxc.check_site = 0 : i64
// CHECK:         memref.store %[[N]], %dims[%{{.*}}] : memref<2xi64>
// CHECK-NEXT:    %[[COUNT:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK:         func.call @cast_0(%nz, %{{.*}}, %[[COUNT]])
// CHECK:         func.call @reduce_sum_0(%{{.*}}, %{{.*}}, %[[COUNT]])
