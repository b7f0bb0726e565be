// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops | filecheck %s

// Comparisons, Where, Mod, BitShift and rounding: one broadcast loop nest of arith ops, no
// calls and no branches (vectorizable).

// A comparison stores i1; the broadcast operand is viewed with a unit dimension.
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %z = graph.less(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %z : tensor<2x3xi1>
}

// CHECK-LABEL: func.func private @less_0(%0: memref<2x3xf32>, %1: memref<3xf32>, %2: memref<2x3xi1>) attributes {onnxc.kernel = "graph.less"} {
// CHECK:         %[[Y:.*]] = memref.reinterpret_cast %1 {{.*}} to memref<1x3xf32>
// CHECK-NEXT:    scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[A:.*]] = memref.load %0[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:        %[[B:.*]] = memref.load %[[Y]][%{{.*}}, %[[J]]] : memref<1x3xf32>
// CHECK-NEXT:        %[[C:.*]] = arith.cmpf olt, %[[A]], %[[B]] : f32
// CHECK-NEXT:        memref.store %[[C]], %2[%[[I]], %[[J]]] : memref<2x3xi1>

// -----

// Where broadcasts all three operands.
func.func @main(%c: tensor<3xi1>, %x: tensor<2x3xf32>, %y: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %z = graph.where(%c, %x, %y) : (tensor<3xi1>, tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}

// CHECK-LABEL: func.func private @where_0(
// CHECK:           %[[C:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<1x3xi1>
// CHECK-NEXT:      %[[X:.*]] = memref.load %1[%{{.*}}, %{{.*}}] : memref<2x3xf32>
// CHECK-NEXT:      %[[Y:.*]] = memref.load %2[%{{.*}}, %{{.*}}] : memref<2x1xf32>
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[C]], %[[X]], %[[Y]] : f32

// -----

// Integer Mod with fmod=0 takes the divisor's sign: a nonzero remainder of the other sign
// moves by the divisor. The remainder divides by a safe divisor, 1 where the hardware would
// trap (0, refused by the run-time check before the kernel runs, and MIN % -1, which is 0).
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %z = graph.mod(%a, %b) {fmod = 0 : i64} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %z : tensor<4xi32>
}

// CHECK-LABEL: func.func private @mod_0(
// CHECK-DAG:     %[[MINUS1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:         %[[A:.*]] = memref.load %0[%{{.*}}] : memref<4xi32>
// CHECK-NEXT:    %[[B:.*]] = memref.load %1[%{{.*}}] : memref<4xi32>
// CHECK-NEXT:    %[[BZ:.*]] = arith.cmpi eq, %[[B]], %[[ZERO]] : i32
// CHECK-NEXT:    %[[AMIN:.*]] = arith.cmpi eq, %[[A]], %[[MIN]] : i32
// CHECK-NEXT:    %[[BM1:.*]] = arith.cmpi eq, %[[B]], %[[MINUS1]] : i32
// CHECK-NEXT:    %[[OVF:.*]] = arith.andi %[[AMIN]], %[[BM1]] : i1
// CHECK-NEXT:    %[[TRAP:.*]] = arith.ori %[[BZ]], %[[OVF]] : i1
// CHECK-NEXT:    %[[SAFE:.*]] = arith.select %[[TRAP]], %[[ONE]], %[[B]] : i32
// CHECK-NEXT:    %[[R:.*]] = arith.remsi %[[A]], %[[SAFE]] : i32
// CHECK-NEXT:    %[[NZ:.*]] = arith.cmpi ne, %[[R]], %{{.*}} : i32
// CHECK-NEXT:    %[[X:.*]] = arith.xori %[[R]], %[[B]] : i32
// CHECK-NEXT:    %[[DIFF:.*]] = arith.cmpi slt, %[[X]], %{{.*}} : i32
// CHECK-NEXT:    %[[FIX:.*]] = arith.andi %[[NZ]], %[[DIFF]] : i1
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[R]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = arith.select %[[FIX]], %[[S]], %[[R]] : i32

// -----

// Unsigned right shifts are logical; a count of 8 or more gives 0 (no poison shift). The
// ui8 constants are signless constants cast to ui8.
func.func @main(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %z = graph.bit_shift(%a, %b) {direction = "RIGHT"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  func.return %z : tensor<4xui8>
}

// CHECK-LABEL: func.func private @bit_shift_0(
// CHECK:         %[[Z8:.*]] = arith.constant 0 : i8
// CHECK-NEXT:    %[[ZERO:.*]] = builtin.unrealized_conversion_cast %[[Z8]] : i8 to ui8
// CHECK-NEXT:    %[[W8:.*]] = arith.constant 8 : i8
// CHECK-NEXT:    %[[WIDTH:.*]] = builtin.unrealized_conversion_cast %[[W8]] : i8 to ui8
// CHECK:           %[[OK:.*]] = arith.cmpi ult, %[[N:.*]], %[[WIDTH]] : ui8
// CHECK-NEXT:      %[[COUNT:.*]] = arith.select %[[OK]], %[[N]], %[[ZERO]] : ui8
// CHECK-NEXT:      %[[S:.*]] = arith.shrui %{{.*}}, %[[COUNT]] : ui8
// CHECK-NEXT:      %{{.*}} = arith.select %[[OK]], %[[S]], %[[ZERO]] : ui8

// -----

// Round halves to even.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = graph.round(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}

// CHECK-LABEL: func.func private @round_0(
// CHECK:           %{{.*}} = math.roundeven %{{.*}} : f32
