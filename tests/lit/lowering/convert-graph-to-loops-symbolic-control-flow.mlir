// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops | filecheck %s
// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops,plan-memory | filecheck %s --check-prefix=PLAN

// Control flow over values with symbolic dimensions (graph_to_loops/control_flow.py). A
// counted loop over a size polynomial is an scf.for up to that size, computed from the
// symbols in the function's block before the loop (so it dominates the body's uses); a scan
// output with a symbol is filled by a store_slice kernel that takes its row count and row
// size as index arguments and clamps the row read from memory into [0, rows). Results,
// branch yields, initial and carried values are copied by the dynamic copy kernel (the
// element count is its last argument), a swap going through temporaries of run-time size
// allocated before the loop; plan-memory keeps each such buffer in its own slot of the
// dynamic arena for the whole loop.

// CHECK-LABEL: func.func private @identity_0(%0: memref<?xf32>, %1: memref<?xf32>, %2: index)
// CHECK-LABEL: func.func private @store_slice_0(%0: memref<?xf32>, %1: memref<i64>, %2: memref<?xf32>, %3: index, %4: index)
// CHECK:         %[[ROW:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT:    %[[LAST:.*]] = arith.subi %3, %{{.*}} : index
// CHECK-NEXT:    %[[LOW:.*]] = arith.minsi %[[ROW]], %[[LAST]] : index
// CHECK-NEXT:    %[[SAFE:.*]] = arith.maxsi %[[LOW]], %{{.*}} : index
// CHECK-NEXT:    %[[START:.*]] = arith.muli %[[SAFE]], %4 : index
// CHECK-NEXT:    %[[INSIDE:.*]] = arith.cmpi slt, %[[SAFE]], %3 : index
// CHECK-NEXT:    scf.if %[[INSIDE]] {
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %4 step %{{.*}} {
// CHECK-NEXT:        %[[V:.*]] = memref.load %0[%[[J]]] : memref<?xf32>
// CHECK-NEXT:        %[[AT:.*]] = arith.addi %[[START]], %[[J]] : index
// CHECK-NEXT:        memref.store %[[V]], %2[%[[AT]]] : memref<?xf32>

// CHECK-LABEL: func.func @counted(
// CHECK:         %n = arith.index_cast
// CHECK:         %past = arith.index_cast
// CHECK:         %seq = arith.index_cast
// CHECK:         func.call @identity_0(%v0, %out0, %n)
// CHECK:         %xt = memref.alloc(%n) {onnxc.elements = "n"} : memref<?xf32>
// CHECK-NEXT:    %acc2 = memref.alloc(%n) {onnxc.elements = "n"} : memref<?xf32>
// CHECK-NEXT:    %[[COUNT:.*]] = arith.addi %past, %seq : index
// CHECK:         scf.for %[[IV:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} {
// CHECK-NEXT:      %[[I:.*]] = arith.index_cast %[[IV]] : index to i64
// CHECK-NEXT:      memref.store %[[I]], %iteration[] : memref<i64>
// CHECK-NEXT:      func.call @gather_0(%x, %iteration, %xt, %n, %past, %seq)
// CHECK-NEXT:      func.call @add_0(%out0, %xt, %acc2, %n)
// CHECK-NEXT:      func.call @store_slice_0(%acc2, %iteration, %out1, %[[COUNT]], %n)
// CHECK-NEXT:      func.call @identity_0(%acc2, %out0, %n)
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

func.func @counted(%a: tensor<?x?xf32, #graph.dims<["past", "n"]>>, %b: tensor<?x?xf32, #graph.dims<["seq", "n"]>>, %v0: tensor<?xf32, #graph.dims<["n"]>>) -> (tensor<?xf32, #graph.dims<["n"]>>, tensor<?x1x?xf32, #graph.dims<["past+seq", "n"]>>) {
  %x = graph.concat(%a, %b) {axis = 0 : i64} : (tensor<?x?xf32, #graph.dims<["past", "n"]>>, tensor<?x?xf32, #graph.dims<["seq", "n"]>>) -> tensor<?x?xf32, #graph.dims<["past+seq", "n"]>>
  %m = graph.constant {value = dense<1000> : tensor<i64>} : tensor<i64>
  %true = graph.constant {value = dense<true> : tensor<i1>} : tensor<i1>
  %s, %ys = "graph.loop"(%m, %true, %v0) <{iterations = #graph.dims<["past+seq"]>}> ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<?xf32, #graph.dims<["n"]>>):
    %xt = graph.gather(%x, %i) {axis = 0 : i64} : (tensor<?x?xf32, #graph.dims<["past+seq", "n"]>>, tensor<i64>) -> tensor<?xf32, #graph.dims<["n"]>>
    %acc2 = graph.add(%acc, %xt) : (tensor<?xf32, #graph.dims<["n"]>>, tensor<?xf32, #graph.dims<["n"]>>) -> tensor<?xf32, #graph.dims<["n"]>>
    %sl = graph.unsqueeze(%acc2) {axes = array<i64: 0>} : (tensor<?xf32, #graph.dims<["n"]>>) -> tensor<1x?xf32, #graph.dims<["n"]>>
    graph.yield %c, %acc2, %sl : tensor<i1>, tensor<?xf32, #graph.dims<["n"]>>, tensor<1x?xf32, #graph.dims<["n"]>>
  }) : (tensor<i64>, tensor<i1>, tensor<?xf32, #graph.dims<["n"]>>) -> (tensor<?xf32, #graph.dims<["n"]>>, tensor<?x1x?xf32, #graph.dims<["past+seq", "n"]>>)
  func.return %s, %ys : tensor<?xf32, #graph.dims<["n"]>>, tensor<?x1x?xf32, #graph.dims<["past+seq", "n"]>>
}

// -----

// CHECK-LABEL: func.func @branch(
// CHECK:         %[[COUNT:.*]] = arith.muli %{{.*}}, %n : index
// CHECK-NEXT:    %y = memref.alloc(%[[COUNT]]) {onnxc.elements = "8*n"}
// CHECK:         %r = memref.alloc(%[[COUNT]]) {onnxc.elements = "8*n"} : memref<?xf32>
// CHECK-NEXT:    %[[C:.*]] = memref.load %c[] : memref<i1>
// CHECK-NEXT:    %a = memref.alloc(%[[COUNT]]) {onnxc.elements = "8*n"} : memref<?xf32>
// CHECK-NEXT:    scf.if %[[C]] {
// CHECK-NEXT:      func.call @add_0(%x, %y, %a, %n)
// CHECK-NEXT:      func.call @identity_0(%a, %r, %[[COUNT]])
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @identity_0(%x, %r, %[[COUNT]])
// CHECK-NEXT:    }
// CHECK-NEXT:    func.call @add_0(%r, %y, %out0, %n)

// %y (read after the if), %r and %a (in a branch) are live together: three slots.
// PLAN-LABEL: func.func @branch(
// PLAN-SAME:      onnxc.dynamic_arena = ["32*n", "32*n", "32*n"]

func.func @branch(%c: tensor<i1>, %x: tensor<?x8xf32, #graph.dims<["n"]>>) -> tensor<?x8xf32, #graph.dims<["n"]>> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %y = graph.mul(%x, %two) : (tensor<?x8xf32, #graph.dims<["n"]>>, tensor<f32>) -> tensor<?x8xf32, #graph.dims<["n"]>>
  %r = graph.if(%c) {
    %a = graph.add(%x, %y) : (tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>) -> tensor<?x8xf32, #graph.dims<["n"]>>
    graph.yield %a : tensor<?x8xf32, #graph.dims<["n"]>>
  } else {
    graph.yield %x : tensor<?x8xf32, #graph.dims<["n"]>>
  } : (tensor<i1>) -> tensor<?x8xf32, #graph.dims<["n"]>>
  %z = graph.add(%r, %y) : (tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>) -> tensor<?x8xf32, #graph.dims<["n"]>>
  func.return %z : tensor<?x8xf32, #graph.dims<["n"]>>
}

// -----

// CHECK-LABEL: func.func @swap(
// CHECK:         %[[COUNT:.*]] = arith.muli %{{.*}}, %n : index
// CHECK-NEXT:    func.call @identity_0(%a0, %out0, %[[COUNT]])
// CHECK-NEXT:    func.call @identity_0(%b0, %out1, %[[COUNT]])
// CHECK:         %staged = memref.alloc(%[[COUNT]]) {onnxc.elements = "8*n"} : memref<?xf32>
// CHECK-NEXT:    %staged_1 = memref.alloc(%[[COUNT]]) {onnxc.elements = "8*n"} : memref<?xf32>
// CHECK:         %{{.*}} = scf.while
// CHECK:         } do {
// CHECK:           func.call @identity_0(%out1, %staged, %[[COUNT]])
// CHECK-NEXT:      func.call @identity_0(%out0, %staged_1, %[[COUNT]])
// CHECK-NEXT:      func.call @identity_0(%staged, %out0, %[[COUNT]])
// CHECK-NEXT:      func.call @identity_0(%staged_1, %out1, %[[COUNT]])
// CHECK-NEXT:      scf.yield

// The two temporaries are used only inside the loop, yet live through all of it.
// PLAN-LABEL: func.func @swap(
// PLAN-SAME:      onnxc.dynamic_arena = ["32*n", "32*n"]
// PLAN:         %staged = memref.view %dynamic_arena[%[[FIRST:.*]]][%{{.*}}]
// PLAN-NEXT:    %staged_1 = memref.view %dynamic_arena[%[[SECOND:.*]]][%{{.*}}]
// PLAN-NOT:     memref.alloc

func.func @swap(%trips: tensor<i64>, %a0: tensor<?x8xf32, #graph.dims<["n"]>>, %b0: tensor<?x8xf32, #graph.dims<["n"]>>) -> (tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>) {
  %true = graph.constant {value = dense<true> : tensor<i1>} : tensor<i1>
  %a, %b = "graph.loop"(%trips, %true, %a0, %b0) ({
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %ai: tensor<?x8xf32, #graph.dims<["n"]>>, %bi: tensor<?x8xf32, #graph.dims<["n"]>>):
    graph.yield %go, %bi, %ai : tensor<i1>, tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>
  }) : (tensor<i64>, tensor<i1>, tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>) -> (tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>)
  func.return %a, %b : tensor<?x8xf32, #graph.dims<["n"]>>, tensor<?x8xf32, #graph.dims<["n"]>>
}
