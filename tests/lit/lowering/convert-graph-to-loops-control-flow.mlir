// RUN: onnxc-opt %s -p insert-runtime-checks,convert-graph-to-loops | filecheck %s

// A counted graph.loop is an scf.for in the entry: the carried value lives in its result
// buffer (here the output argument), the iteration number in a one-element buffer the body
// reads, and each scan slice is stored at its row by a store_slice kernel. A check inside the
// body cannot return from the function: a failure records its site + 1 in %failed_site and
// the rest of the body is skipped (scf.if), later iterations do nothing, and a nested_checks
// call after the loop sets the status flag that return-check-status tests. A loop ended by a
// run-time condition is an scf.while over the trip count and the condition buffer.

func.func @main(%n: tensor<i64>, %go: tensor<i1>, %v0: tensor<2xf32>, %x: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>) {
  %three = graph.constant {value = dense<3> : tensor<i64>} : tensor<i64>
  %true = graph.constant {value = dense<true> : tensor<i1>} : tensor<i1>
  %s, %ys = "graph.loop"(%three, %true, %v0) <{iterations = 3 : i64}> ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<2xf32>):
    %xt = graph.gather(%x, %i) {axis = 0 : i64} : (tensor<3x2xf32>, tensor<i64>) -> tensor<2xf32>
    %acc2 = graph.add(%acc, %xt) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %c, %acc2, %acc2 : tensor<i1>, tensor<2xf32>, tensor<2xf32>
  }) : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
  %w = "graph.loop"(%n, %go, %v0) ({
  ^bb0(%j: tensor<i64>, %c2: tensor<i1>, %v: tensor<2xf32>):
    %v2 = graph.add(%v, %v) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %c2, %v2 : tensor<i1>, tensor<2xf32>
  }) : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  func.return %s, %ys, %w : tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func private @store_slice_0(%0: memref<2xf32>, %1: memref<i64>, %2: memref<3x2xf32>)
// CHECK:         %[[ROW:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT:    %[[LOW:.*]] = arith.minsi %[[ROW]], %{{.*}} : index
// CHECK-NEXT:    %[[SAFE:.*]] = arith.maxsi %[[LOW]], %{{.*}} : index

// CHECK-LABEL: func.func private @nested_checks_0(%0: memref<1xi64>, %1: memref<3xi64>)
// CHECK:         %[[SITE:.*]] = memref.load %0[%{{.*}}] : memref<1xi64>
// CHECK-NEXT:    %[[BAD:.*]] = arith.cmpi ne, %[[SITE]], %{{.*}} : i64
// CHECK-NEXT:    %[[FLAG:.*]] = arith.extui %[[BAD]] : i1 to i64
// CHECK-NEXT:    memref.store %[[FLAG]], %1[%{{.*}}] : memref<3xi64>

// CHECK-LABEL: func.func @main(
// CHECK-SAME:      %out0: memref<2xf32>, %out1: memref<3x2xf32>, %out2: memref<2xf32>)
// CHECK:         func.call @identity_0(%v0, %out0)
// CHECK:         %iteration = memref.alloc() : memref<i64>
// CHECK:         %failed_site = memref.alloc() : memref<1xi64>
// CHECK:         memref.store %{{.*}}, %failed_site[%{{.*}}] : memref<1xi64>
// CHECK:         %xt = memref.alloc() : memref<2xf32>
// CHECK:         %acc2 = memref.alloc() : memref<2xf32>
// CHECK:         scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[I:.*]] = arith.index_cast %[[IV]] : index to i64
// CHECK-NEXT:      memref.store %[[I]], %iteration[] : memref<i64>
// CHECK:           %[[NOTHING_FAILED:.*]] = arith.cmpi eq
// CHECK-NEXT:      scf.if %[[NOTHING_FAILED]] {
// CHECK-NEXT:        func.call @check_indices_0(%iteration, %status) {onnxc.check_site = 0 : i64}
// CHECK:             %[[FLAG:.*]] = memref.load %status[%{{.*}}] : memref<3xi64>
// CHECK-NEXT:        %[[FAILED:.*]] = arith.cmpi ne, %[[FLAG]], %{{.*}} : i64
// CHECK-NEXT:        scf.if %[[FAILED]] {
// CHECK-NEXT:          %[[CODE:.*]] = arith.constant 1 : i64
// CHECK:               memref.store %[[CODE]], %failed_site[%{{.*}}] : memref<1xi64>
// CHECK-NEXT:        }
// CHECK-NEXT:        %[[PASSED:.*]] = arith.cmpi eq, %[[FLAG]], %{{.*}} : i64
// CHECK-NEXT:        scf.if %[[PASSED]] {
// CHECK-NEXT:          func.call @gather_0(%x, %iteration, %xt)
// CHECK-NEXT:          func.call @add_0(%out0, %xt, %acc2)
// CHECK-NEXT:          func.call @store_slice_0(%acc2, %iteration, %out1)
// CHECK-NEXT:          func.call @identity_0(%acc2, %out0)
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.call @nested_checks_0(%failed_site, %status) {onnxc.check_site = -1 : i64, onnxc.nested_checks = 0 : i64}
// CHECK:         func.call @identity_1(%{{.*}}, %{{.*}}) : (memref<1xi1>, memref<1xi1>) -> ()
// CHECK:         %{{.*}} = scf.while (%[[J:.*]] = %{{.*}}) : (i64) -> i64 {
// CHECK-NEXT:      %[[TRIPS:.*]] = memref.load %n[] : memref<i64>
// CHECK-NEXT:      %[[BELOW:.*]] = arith.cmpi slt, %[[J]], %[[TRIPS]] : i64
// CHECK-NEXT:      %[[C:.*]] = memref.load %cond_1[] : memref<i1>
// CHECK-NEXT:      %[[GO:.*]] = arith.andi %[[BELOW]], %[[C]] : i1
// CHECK-NEXT:      scf.condition(%[[GO]]) %[[J]] : i64
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^{{.*}}(%[[K:.*]]: i64):
// CHECK-NEXT:      memref.store %[[K]], %iteration_1[] : memref<i64>
// CHECK:           %[[NEXT:.*]] = arith.addi %[[K]], %{{.*}} : i64
// CHECK-NEXT:      func.call @add_0(%out2, %out2, %v2)
// CHECK-NEXT:      func.call @identity_0(%v2, %out2)
// CHECK-NEXT:      scf.yield %[[NEXT]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
