// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops | filecheck %s

// Resize and GatherElements kernels: Resize reads per-axis tap tables passed as constants
// (index table, weight table); the first axis with more than one index is the parallel loop.

// Nearest without extrapolation is a gather: each resized axis loads its source position
// at its own loop level, the innermost loop only copies.
func.func @main(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> {
  %y = graph.resize(%x) {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = 0 : i64, antialias = 0 : i64, extrapolation_value = 0.000000e+00 : f64, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, roi = array<f64: 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
  func.return %y : tensor<1x2x6x8xf32>
}

// CHECK:       "memref.global"() <{sym_name = "cst_0", type = memref<14xi64>, initial_value = dense<[0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 3, 3]>
// CHECK-LABEL: func.func private @resize_0(%0: memref<1x2x3x4xf32>, %1: memref<14xi64>, %2: memref<14xf32>, %3: memref<1x2x6x8xf32>)
// CHECK:         scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[HT:.*]] = memref.load %1[%[[H]]] : memref<14xi64>
// CHECK-NEXT:        %[[HI:.*]] = arith.index_cast %[[HT]] : i64 to index
// CHECK-NEXT:        scf.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          %[[WA:.*]] = arith.addi %[[W]], %{{.*}} : index
// CHECK-NEXT:          %[[WT:.*]] = memref.load %1[%[[WA]]] : memref<14xi64>
// CHECK-NEXT:          %[[WI:.*]] = arith.index_cast %[[WT]] : i64 to index
// CHECK-NEXT:          %[[V:.*]] = memref.load %0[%{{.*}}, %[[C]], %[[HI]], %[[WI]]] : memref<1x2x3x4xf32>
// CHECK-NEXT:          memref.store %[[V]], %3[%{{.*}}, %[[C]], %[[H]], %[[W]]] : memref<1x2x6x8xf32>
// CHECK:         } {onnxc.parallel}

// -----

// Linear upsampling: two passes. The rows are resized first into scratch (two gathered
// taps along each row), then a row's two vertical taps are loaded once per output row and
// the innermost loop reads whole scratch rows: two fused multiply-adds.
func.func @main(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> {
  %y = graph.resize(%x) {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = 0 : i64, antialias = 0 : i64, extrapolation_value = 0.000000e+00 : f64, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, roi = array<f64: 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
  func.return %y : tensor<1x2x6x8xf32>
}

// CHECK-LABEL: func.func private @resize_0(%0: memref<1x2x3x4xf32>, %1: memref<28xi64>, %2: memref<28xf32>, %3: memref<1x2x3x8xf32>, %4: memref<1x2x6x8xf32>)
// CHECK:         scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        scf.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-2:       memref.load %2[%{{.*}}] : memref<28xf32>
// CHECK:               memref.load %0[%{{.*}}, %[[C]], %[[R]], %{{.*}}] : memref<1x2x3x4xf32>
// CHECK:               memref.store %{{.*}}, %3[%{{.*}}, %[[C]], %[[R]], %[[W]]] : memref<1x2x3x8xf32>
// CHECK:         } {onnxc.parallel}
// CHECK-NEXT:    scf.for %[[C2:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-2:     memref.load %2[%{{.*}}] : memref<28xf32>
// CHECK:             scf.for %[[W2:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          memref.load %3[%{{.*}}, %[[C2]], %{{.*}}, %[[W2]]] : memref<1x2x3x8xf32>
// CHECK-NEXT:          math.fma
// CHECK-NEXT:          memref.load %3[%{{.*}}, %[[C2]], %{{.*}}, %[[W2]]] : memref<1x2x3x8xf32>
// CHECK-NEXT:          math.fma
// CHECK-NEXT:          memref.store %{{.*}}, %4[%{{.*}}, %[[C2]], %[[H]], %[[W2]]] : memref<1x2x6x8xf32>
// CHECK:         } {onnxc.parallel}

// -----

// Rows larger than the output (a vertical downscale): one pass, the body sums the four
// corners with fused multiply-adds.
func.func @main(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x1x8xf32> {
  %y = graph.resize(%x) {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = 0 : i64, antialias = 0 : i64, extrapolation_value = 0.000000e+00 : f64, scales = array<f64: 1.0, 1.0, 0.5, 2.0>, roi = array<f64: 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x1x8xf32>
  func.return %y : tensor<1x2x1x8xf32>
}

// CHECK-LABEL: func.func private @resize_0(%0: memref<1x2x3x4xf32>, %1: memref<18xi64>, %2: memref<18xf32>, %3: memref<1x2x1x8xf32>)
// CHECK:         scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-2:   memref.load %2[%{{.*}}] : memref<18xf32>
// CHECK:           scf.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-4:     math.fma
// CHECK-NOT:         math.fma
// CHECK:             memref.store %{{.*}}, %3[%{{.*}}, %[[C]], %{{.*}}, %[[W]]] : memref<1x2x1x8xf32>

// -----

// GatherElements wraps a negative index by the dimension size, clamps it into the axis (the
// indices were checked before the call) and replaces that axis.
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>) -> tensor<2x4xf32> {
  %y = graph.gather_elements(%x, %i) {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func private @gather_elements_0(%0: memref<3x4xf32>, %1: memref<2x4xi64>, %2: memref<2x4xf32>)
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[R:.*]] = memref.load %1[%[[I]], %[[J]]] : memref<2x4xi64>
// CHECK-NEXT:        %[[IX:.*]] = arith.index_cast %[[R]] : i64 to index
// CHECK-NEXT:        %[[NEG:.*]] = arith.cmpi slt, %[[IX]], %{{.*}} : index
// CHECK-NEXT:        %[[UP:.*]] = arith.addi %[[IX]], %{{.*}} : index
// CHECK-NEXT:        %[[WRAP:.*]] = arith.select %[[NEG]], %[[UP]], %[[IX]] : index
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi ult, %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:        %[[K:.*]] = arith.select %[[IN]], %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:        %[[V:.*]] = memref.load %0[%[[K]], %[[J]]] : memref<3x4xf32>
// CHECK-NEXT:        memref.store %[[V]], %2[%[[I]], %[[J]]] : memref<2x4xf32>
// CHECK:         } {onnxc.parallel}

// -----

// A transpose that moves no bytes is a view of its operand's buffer, as a reshape is: an
// NHWC tensor seen as the plain [N, H, W, C] (ConvNeXt's permute after its conv; the
// layout passes make it), and a transpose of a dimension of size 1. One that moves bytes
// is a kernel.
func.func @main(%x: tensor<1x8x2x4xf32, #layout.spec<"NHWC">>, %y: tensor<2x1x3xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x3xf32>, tensor<3x2x1xf32>) {
  %a = graph.transpose(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x4xf32, #layout.spec<"NHWC">>) -> tensor<1x2x4x8xf32>
  %b = graph.transpose(%y) {perm = array<i64: 1, 0, 2>} : (tensor<2x1x3xf32>) -> tensor<1x2x3xf32>
  %c = graph.transpose(%y) {perm = array<i64: 2, 0, 1>} : (tensor<2x1x3xf32>) -> tensor<3x2x1xf32>
  func.return %a, %b, %c : tensor<1x2x4x8xf32>, tensor<1x2x3xf32>, tensor<3x2x1xf32>
}

// CHECK-LABEL: func.func private @transpose_0(%0: memref<2x1x3xf32>, %1: memref<3x2x1xf32>)
// CHECK-NOT:     func.func private @transpose_1
// CHECK:         func.func @main(%x: memref<1x2x4x8xf32>, %y: memref<2x1x3xf32>
// CHECK-NEXT:      %b = memref.reinterpret_cast %y {{.*}} : memref<2x1x3xf32> to memref<1x2x3xf32>
// CHECK-NEXT:      func.call @transpose_0(%y, %out2)
// CHECK-NOT:       func.call @transpose
