// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops | filecheck %s

// A check becomes a call of a check kernel on the run's status record (one alloc, shared by
// every check); the call carries its site number and the entry lists the sites. The kernel
// scans without branching: the first bad position is a min-reduction of
// select(bad, position, size), and one unsigned compare tests -n <= i < n (i + n <u 2n).

func.func @main(%x: tensor<4xf32>, %i: tensor<6xi32>, %j: tensor<6xi32>, %u: tensor<6xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  graph.check_indices(%i) {bounds = array<i64: 4>, negative = 1 : i64, node = "a", op_type = "ScatterElements", operand = "indices"} : tensor<6xi32>
  %a = graph.scatter_elements(%x, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<4xf32>, tensor<6xi32>, tensor<6xf32>) -> tensor<4xf32>
  graph.check_indices(%j) {bounds = array<i64: 4>, negative = 1 : i64, node = "b", op_type = "ScatterElements", operand = "indices"} : tensor<6xi32>
  %b = graph.scatter_elements(%x, %j, %u) {axis = 0 : i64, reduction = "add"} : (tensor<4xf32>, tensor<6xi32>, tensor<6xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func private @check_indices_0(%0: memref<6xi32>, %1: memref<3xi64>)
// CHECK-DAG:     %[[SIZE:.*]] = arith.constant 6 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[TWO_N:.*]] = arith.constant 8 : i64
// CHECK:         %[[FIRST:.*]] = scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[SIZE]]) -> (i64) {
// CHECK-NEXT:      %[[AT:.*]] = arith.index_cast %[[R]] : index to i64
// CHECK:           %[[RAW:.*]] = memref.load %{{.*}}[%[[R]], %{{.*}}] : memref<6x1xi32>
// CHECK-NEXT:      %[[V:.*]] = arith.extsi %[[RAW]] : i32 to i64
// CHECK-NEXT:      %[[SHIFTED:.*]] = arith.addi %[[V]], %[[N]] : i64
// CHECK-NEXT:      %[[BAD:.*]] = arith.cmpi uge, %[[SHIFTED]], %[[TWO_N]] : i64
// CHECK-NEXT:      %[[CAND:.*]] = arith.select %[[BAD]], %{{.*}}, %[[SIZE]] : i64
// CHECK-NEXT:      %[[MIN:.*]] = arith.minsi %[[ACC]], %[[CAND]] : i64
// CHECK-NEXT:      scf.yield %[[MIN]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[FAILED:.*]] = arith.cmpi ne, %[[FIRST]], %[[SIZE]] : i64
// CHECK-NEXT:    %[[FLAG:.*]] = arith.extui %[[FAILED]] : i1 to i64
// CHECK-NEXT:    memref.store %[[FLAG]], %1[%{{.*}}] : memref<3xi64>
// CHECK-NEXT:    memref.store %[[FIRST]], %1[%{{.*}}] : memref<3xi64>
// CHECK-NOT:     scf.if
// CHECK:         func.return

// CHECK-NOT:   func.func private @check_indices_1(
// CHECK-LABEL: func.func @main(
// CHECK-SAME:      onnxc.check_sites = [{kind = "index", node = "a", op_type = "ScatterElements", operand = "indices", ranges = array<i64: -4, 3>}, {kind = "index", node = "b", op_type = "ScatterElements", operand = "indices", ranges = array<i64: -4, 3>}]
// CHECK:         %[[STATUS:.*]] = memref.alloc() : memref<3xi64>
// CHECK-NEXT:    func.call @check_indices_0(%i, %[[STATUS]]) {onnxc.check_site = 0 : i64}
// CHECK:         func.call @scatter_elements_0(
// CHECK:         func.call @check_indices_0(%j, %[[STATUS]]) {onnxc.check_site = 1 : i64}

// -----

// A Gather (or GatherElements) right after the check of its indices checks them itself, in
// the loop that reads them: the clamps' in-range flags are and-reduced through the innermost
// loop (still vectorizable), a failure sets the record's `failed` word, and the entry calls
// the check kernel (`onnxc.check_fallback`) only then, to find the first bad element.

func.func @main(%x: tensor<4x3xf32>, %i: tensor<6xi64>) -> tensor<6x3xf32> {
  graph.check_indices(%i) {bounds = array<i64: 4>, negative = 1 : i64, node = "a", op_type = "Gather", operand = "indices"} : tensor<6xi64>
  %a = graph.gather(%x, %i) {axis = 0 : i64} : (tensor<4x3xf32>, tensor<6xi64>) -> tensor<6x3xf32>
  func.return %a : tensor<6x3xf32>
}

// CHECK-LABEL: func.func private @check_indices_0(%0: memref<6xi64>, %1: memref<3xi64>)
// CHECK-LABEL: func.func private @gather_0(%0: memref<4x3xf32>, %1: memref<6xi64>, %2: memref<3xi64>, %3: memref<6x3xf32>)
// CHECK-DAG:     %[[TRUE:.*]] = arith.constant true
// CHECK:         memref.store %{{.*}}, %2[%{{.*}}] : memref<3xi64>
// CHECK:         %[[OK:.*]] = scf.for %{{.*}} iter_args(%[[ACC:.*]] = %[[TRUE]]) -> (i1) {
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK:           %[[ALL:.*]] = arith.andi %[[ACC]], %[[IN]] : i1
// CHECK-NEXT:      scf.yield %[[ALL]] : i1
// CHECK:         %[[TRIPS:.*]] = arith.select %[[OK]], %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %[[TRIPS]] step %{{.*}} {
// CHECK-NEXT:      memref.store %{{.*}}, %2[%{{.*}}] : memref<3xi64>
// CHECK-LABEL: func.func @main(
// CHECK:         func.call @gather_0(%x, %i, %status, %out0) {onnxc.check_site = 0 : i64, onnxc.check_fallback = "check_indices_0", onnxc.check_operands = [1 : i64, 2 : i64]}
// CHECK-NOT:     func.call @check_indices_0

// -----

// A divisor check looks for zeros.

func.func @main(%a: tensor<8xi64>, %b: tensor<8xi64>) -> tensor<8xi64> {
  graph.check_divisor(%b) {node = "q", op_type = "Div", operand = "B"} : tensor<8xi64>
  %q = graph.div(%a, %b) : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  func.return %q : tensor<8xi64>
}

// CHECK-LABEL: func.func private @check_divisor_0(%0: memref<8xi64>, %1: memref<3xi64>)
// CHECK:         scf.for
// CHECK:           %[[V:.*]] = memref.load %{{.*}} : memref<8x1xi64>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.cmpi eq, %[[V]], %{{.*}} : i64
// CHECK-NEXT:      arith.select %[[ZERO]]
