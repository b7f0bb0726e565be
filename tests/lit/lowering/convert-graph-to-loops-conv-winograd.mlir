// RUN: onnxc-opt %s --split-input-file --compile-target x86-64-v4 -p convert-graph-to-loops | filecheck %s

// A 3x3 stride-1 conv (bias, relu) in NHWC whose 16x16 output is 16 tiles of 4x4: it runs as
// Winograd F(4x4, 3x3). The kernel takes the transformed weights (36 points x 16 x 16, packed
// at compile time), the bordered input copy (18x18), V and M (36 points x 16 tiles x 16
// channels) after its inputs. Four parallel loops: the border copy; the input transform (36
// vector loads of a tile's patch, 36 stores into V); the 36 products on the micro-kernel
// (accumulators in iter_args, A from V as scalars, B from the packed constant); the output
// transform (36 loads from M, bias, relu, stores into Y).

func.func @winograd(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<16x16x3x3xf32>} : tensor<16x16x3x3xf32>
  %b = graph.constant {value = dense<0.25> : tensor<16xf32>} : tensor<16xf32>
  %xn = layout.convert %x : tensor<1x16x16x16xf32> -> tensor<1x16x16x16xf32, #layout.spec<"NHWC">>
  %yn = graph.conv(%xn, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<1x16x16x16xf32, #layout.spec<"NHWC">>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32, #layout.spec<"NHWC">>
  %y = layout.convert %yn : tensor<1x16x16x16xf32, #layout.spec<"NHWC">> -> tensor<1x16x16x16xf32>
  func.return %y : tensor<1x16x16x16xf32>
}

// CHECK-LABEL: func.func private @conv_0(
// CHECK-SAME:      %{{.*}}: memref<1x16x16x16xf32>, %{{.*}}: memref<16x16x3x3xf32>,
// CHECK-SAME:      %[[BIAS:[0-9]+]]: memref<16xf32>, %[[U:[0-9]+]]: memref<9216xf32>,
// CHECK-SAME:      %[[PAD:[0-9]+]]: memref<1x18x18x16xf32>, %[[V:[0-9]+]]: memref<36x16x16xf32>,
// CHECK-SAME:      %[[M:[0-9]+]]: memref<36x16x16xf32>, %[[Y:[0-9]+]]: memref<1x16x16x16xf32>)
// CHECK:         %[[PF:[0-9]+]] = memref.reinterpret_cast %[[PAD]] {{.*}} to memref<5184xf32>
// CHECK:         vector.store %{{.*}}, %[[PF]]
// CHECK:         } {onnxc.parallel}
// CHECK:         %[[VF:[0-9]+]] = memref.reinterpret_cast %[[V]] {{.*}} to memref<9216xf32>
// CHECK:         vector.load %[[PF]][%{{.*}}] : memref<5184xf32>, vector<16xf32>
// CHECK-COUNT-35: vector.load %[[PF]]
// CHECK:         vector.store %{{.*}}, %[[VF]][%{{.*}}] : memref<9216xf32>, vector<16xf32>
// CHECK-COUNT-35: vector.store %{{.*}}, %[[VF]]
// CHECK:         } {onnxc.parallel}
// CHECK-DAG:     %[[MV:[0-9]+]] = memref.reinterpret_cast %[[M]] {{.*}} to memref<576x16xf32>
// CHECK-DAG:     %[[VV:[0-9]+]] = memref.reinterpret_cast %[[V]] {{.*}} to memref<576x16xf32>
// CHECK:         scf.for {{.*}} iter_args(
// CHECK:           memref.load %[[VV]][%{{.*}}, %{{.*}}] : memref<576x16xf32>
// CHECK:           vector.load %[[U]][%{{.*}}] : memref<9216xf32>, vector<16xf32>
// CHECK-NEXT:      vector.broadcast
// CHECK-NEXT:      vector.fma
// CHECK:         vector.store %{{.*}}, %[[MV]]
// CHECK:         } {onnxc.parallel}
// CHECK:         %[[MF:[0-9]+]] = memref.reinterpret_cast %[[M]] {{.*}} to memref<9216xf32>
// CHECK-COUNT-36: vector.load %[[MF]]
// CHECK:         vector.load %[[BIAS]]
// CHECK:         arith.addf
// CHECK:         arith.maximumf
// CHECK:         vector.store %{{.*}}, %{{.*}} : memref<4096xf32>, vector<16xf32>
// CHECK:         } {onnxc.parallel}

// -----

// The same conv on a 4x4 map: one tile is too few to pay for the 4x larger transformed
// weights (MIN_TILES), so it stays an implicit GEMM over 9 taps (packed weights 9 x 16 x 16,
// the padded input, no V or M).

func.func @few_tiles(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<16x16x3x3xf32>} : tensor<16x16x3x3xf32>
  %xn = layout.convert %x : tensor<1x16x4x4xf32> -> tensor<1x16x4x4xf32, #layout.spec<"NHWC">>
  %yn = graph.conv(%xn, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x4x4xf32, #layout.spec<"NHWC">>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32, #layout.spec<"NHWC">>
  %y = layout.convert %yn : tensor<1x16x4x4xf32, #layout.spec<"NHWC">> -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}

// CHECK-LABEL: func.func private @conv_0(
// CHECK-SAME:      %{{.*}}: memref<1x4x4x16xf32>, %{{.*}}: memref<16x16x3x3xf32>,
// CHECK-SAME:      %{{.*}}: memref<2304xf32>, %{{.*}}: memref<1x6x6x16xf32>,
// CHECK-SAME:      %{{.*}}: memref<1x4x4x16xf32>)
