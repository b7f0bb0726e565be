// RUN: onnxc-opt %s --split-input-file --compile-target x86-64-v4 -p convert-graph-to-loops | filecheck %s

// A 3x3 pad-1 conv (bias, relu) in NHWC, between the layout.converts the layout pass puts at
// the boundary. The conv kernel takes physical NHWC memrefs, the weight packed at compile
// time (a flat constant) and the zero-padded input scratch (1x8x8x8) last among its inputs.
// It first copies the input into the scratch's interior (vector moves, rows in parallel),
// then runs the implicit GEMM: accumulators in iter_args, A read as scalars from the padded
// scratch, B as vectors from the packed constant, one vector.fma per accumulator; bias and
// relu are applied to the accumulators before the only store, in a parallel row-block loop.
// Built for x86-64-v4 (AVX-512 tiles), so the checks hold on any host.

func.func @main(%x: tensor<1x8x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<16x8x3x3xf32>} : tensor<16x8x3x3xf32>
  %b = graph.constant {value = dense<0.25> : tensor<16xf32>} : tensor<16xf32>
  %xn = layout.convert %x : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32, #layout.spec<"NHWC">>
  %yn = graph.conv(%xn, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<1x8x6x6xf32, #layout.spec<"NHWC">>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32, #layout.spec<"NHWC">>
  %y = layout.convert %yn : tensor<1x16x6x6xf32, #layout.spec<"NHWC">> -> tensor<1x16x6x6xf32>
  func.return %y : tensor<1x16x6x6xf32>
}

// CHECK-LABEL: func.func private @layout.convert_0(
// CHECK-SAME:      %{{.*}}: memref<1x8x6x6xf32>, %{{.*}}: memref<1x6x6x8xf32>)
// CHECK-LABEL: func.func private @conv_0(
// CHECK-SAME:      %[[X:.*]]: memref<1x6x6x8xf32>, %{{.*}}: memref<16x8x3x3xf32>,
// CHECK-SAME:      %[[BIAS:.*]]: memref<16xf32>, %[[B:.*]]: memref<{{[0-9]+}}xf32>,
// CHECK-SAME:      %[[PAD:.*]]: memref<1x8x8x8xf32>, %[[Y:.*]]: memref<1x6x6x16xf32>)
// CHECK-DAG:     %[[YV:.*]] = memref.reinterpret_cast %[[Y]] {{.*}} to memref<36x16xf32>
// CHECK-DAG:     %[[XF:.*]] = memref.reinterpret_cast %[[X]] {{.*}} to memref<288xf32>
// CHECK-DAG:     %[[PF:.*]] = memref.reinterpret_cast %[[PAD]] {{.*}} to memref<512xf32>
// CHECK:         vector.load %[[XF]][%{{.*}}] : memref<288xf32>, vector<{{[0-9]+}}xf32>
// CHECK-NEXT:    arith.addi
// CHECK-NEXT:    vector.store %{{.*}}, %[[PF]][%{{.*}}] : memref<512xf32>, vector<{{[0-9]+}}xf32>
// CHECK:         } {onnxc.parallel}
// CHECK:         scf.for {{.*}} iter_args(
// CHECK:           scf.for {{.*}} iter_args(
// CHECK:             memref.load %[[PF]][%{{.*}}] : memref<512xf32>
// CHECK:             vector.load %[[B]][%{{.*}}] : memref<{{[0-9]+}}xf32>, vector<{{[0-9]+}}xf32>
// CHECK-NEXT:        vector.broadcast
// CHECK-NEXT:        vector.fma
// CHECK:         vector.load %[[BIAS]]
// CHECK-NEXT:    arith.addf
// CHECK:         arith.maximumf
// CHECK:         vector.store %{{.*}}, %[[YV]]
// CHECK-NOT:     memref.store
// CHECK:         } {onnxc.parallel}
// CHECK-LABEL: func.func private @layout.convert_1(
// CHECK-SAME:      %{{.*}}: memref<1x6x6x16xf32>, %{{.*}}: memref<1x16x6x6xf32>)

// -----

// The same conv over an image of symbolic size (h x w): the memrefs are flat, the kernel
// takes h and w last and computes every size from them at its top; the padded input is a
// flat scratch the caller sizes (in the dynamic arena) from (h+2)*(w+2)*8 elements.

func.func @symbolic(%x: tensor<1x8x?x?xf32, #graph.dims<["h", "w"]>>) -> tensor<1x16x?x?xf32, #graph.dims<["h", "w"]>> {
  %w = graph.constant {value = dense<0.5> : tensor<16x8x3x3xf32>} : tensor<16x8x3x3xf32>
  %xn = layout.convert %x : tensor<1x8x?x?xf32, #graph.dims<["h", "w"]>> -> tensor<1x8x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
  %yn = graph.conv(%xn, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x?x?xf32, #graph.dims<["h", "w"], "NHWC">>, tensor<16x8x3x3xf32>) -> tensor<1x16x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
  %y = layout.convert %yn : tensor<1x16x?x?xf32, #graph.dims<["h", "w"], "NHWC">> -> tensor<1x16x?x?xf32, #graph.dims<["h", "w"]>>
  func.return %y : tensor<1x16x?x?xf32, #graph.dims<["h", "w"]>>
}

// CHECK-LABEL: func.func private @conv_0(
// CHECK-SAME:      %{{.*}}: memref<?xf32>, %{{.*}}: memref<16x8x3x3xf32>, %{{.*}}: memref<{{[0-9]+}}xf32>,
// CHECK-SAME:      %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %[[H:.*]]: index, %[[W:.*]]: index)
// CHECK:         arith.muli %{{.*}}, %[[H]] : index
// CHECK-LABEL: func.func @symbolic(
// CHECK:         %[[SCRATCH:.*]] = memref.alloc(%{{.*}}) {onnxc.elements = "8*h*w+16*h+16*w+32"} : memref<?xf32>
// CHECK:         func.call @conv_0(%xn, %w_1, %table, %[[SCRATCH]], %yn, %h, %w)
