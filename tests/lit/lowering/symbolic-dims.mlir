// RUN: onnxc-opt %s -p convert-graph-to-loops | filecheck %s
// RUN: onnxc-opt %s -p convert-graph-to-loops,plan-memory | filecheck %s --check-prefix=PLAN

// A tensor with symbolic dimensions is a flat `memref<?xf32>`. Each kernel takes the value
// of every size symbol of its types as a trailing `index` argument and addresses the flat
// buffer with run-time strides; the entry takes the symbols' values in a `dims` buffer after
// its outputs, and plan-memory puts buffers of symbolic size in a dynamic arena at offsets
// computed from them (slots of equal size polynomials reused once their buffer is dead).

// CHECK-LABEL: func.func private @add_0
// CHECK-SAME: (%{{.*}}: memref<?xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<?xf32>, %[[SEQ:.*]]: index)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SEQ]]
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK-LABEL: func.func @main
// CHECK-SAME: %dims: memref<1xi64>
// CHECK-SAME: onnxc.symbols = ["seq"]
// CHECK: %[[S:.*]] = memref.load %dims
// CHECK: %seq = arith.index_cast %[[S]] : i64 to index
// CHECK: memref.alloc(%{{.*}}) {onnxc.elements = "8*seq"} : memref<?xf32>
// CHECK: func.call @add_0(%x, %b, %{{.*}}, %seq)

// PLAN-LABEL: func.func @main
// PLAN-SAME: %dynamic_arena: memref<?xi8>
// PLAN-SAME: onnxc.dynamic_arena = ["32*seq", "32*seq"]
// PLAN: memref.view %dynamic_arena[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// PLAN-NOT: memref.alloc

func.func @main(%x: tensor<1x?x8xf32, #graph.dims<["seq"]>>, %b: tensor<8xf32>) -> tensor<1x?x8xf32, #graph.dims<["seq"]>> {
  %y = graph.add(%x, %b) : (tensor<1x?x8xf32, #graph.dims<["seq"]>>, tensor<8xf32>) -> tensor<1x?x8xf32, #graph.dims<["seq"]>>
  %z = graph.relu(%y) : (tensor<1x?x8xf32, #graph.dims<["seq"]>>) -> tensor<1x?x8xf32, #graph.dims<["seq"]>>
  %w = graph.mul(%z, %y) : (tensor<1x?x8xf32, #graph.dims<["seq"]>>, tensor<1x?x8xf32, #graph.dims<["seq"]>>) -> tensor<1x?x8xf32, #graph.dims<["seq"]>>
  func.return %w : tensor<1x?x8xf32, #graph.dims<["seq"]>>
}
