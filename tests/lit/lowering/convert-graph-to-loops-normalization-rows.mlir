// RUN: onnxc-opt %s -p convert-graph-to-loops --split-input-file | filecheck %s

// graph.rms_normalization shares LayerNorm's row kernel without the mean: per row one
// reassociable sum of squares (it vectorizes), 1 / sqrt(sum / n + eps), then one scaled write.

func.func @rms(%x: tensor<3x40xf32>, %s: tensor<40xf32>) -> tensor<3x40xf32> {
  %y = graph.rms_normalization(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<3x40xf32>, tensor<40xf32>) -> tensor<3x40xf32>
  func.return %y : tensor<3x40xf32>
}
// CHECK-LABEL: func.func private @rms_normalization_0(
// CHECK-SAME:      %[[X:.*]]: memref<3x40xf32>, %[[S:.*]]: memref<40xf32>, %[[Y:.*]]: memref<3x40xf32>) attributes {onnxc.kernel = "graph.rms_normalization"}
// CHECK-DAG:       %[[EPS:.*]] = arith.constant 1.000000e-05 : f32
// CHECK-DAG:       %[[INV_N:.*]] = arith.constant 2.500000e-02 : f32
// CHECK:           scf.for %[[R:.*]] = {{.*}} {
// CHECK-NEXT:        %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = {{.*}}) -> (f32) {
// CHECK-NEXT:          %[[V:.*]] = memref.load %[[X]][%[[R]], {{.*}}] : memref<3x40xf32>
// CHECK-NEXT:          %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          %{{.*}} = arith.addf %[[ACC]], %[[SQ]] fastmath<reassoc,contract> : f32
// CHECK:             %[[MEAN:.*]] = arith.mulf %[[SUM]], %[[INV_N]] : f32
// CHECK-NEXT:        %[[ROOT:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK-NEXT:        %[[SQRT:.*]] = math.sqrt %[[ROOT]] : f32
// CHECK-NEXT:        %[[INV:.*]] = arith.divf %{{.*}}, %[[SQRT]] : f32
// CHECK-NEXT:        scf.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:          %[[XI:.*]] = memref.load %[[X]][%[[R]], %[[I]]] : memref<3x40xf32>
// CHECK-NEXT:          %[[N:.*]] = arith.mulf %[[XI]], %[[INV]] : f32
// CHECK-NEXT:          %[[G:.*]] = memref.load %[[S]][%[[I]]] : memref<40xf32>
// CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[N]], %[[G]] : f32
// CHECK-NEXT:          memref.store %[[P]], %[[Y]][%[[R]], %[[I]]] : memref<3x40xf32>
// CHECK:           } {onnxc.parallel}

// -----

// The scale broadcasts within the normalized dimensions: [1, 4] over [3, 4] is viewed as
// [4] (its leading 1 dropped) and read with the last index only.
func.func @rms_broadcast_scale(%x: tensor<2x3x4xf32>, %s: tensor<1x4xf32>) -> tensor<2x3x4xf32> {
  %y = graph.rms_normalization(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<1x4xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func private @rms_normalization_0(
// CHECK-SAME:      %{{.*}}: memref<2x3x4xf32>, %[[S:.*]]: memref<1x4xf32>, %{{.*}}: memref<2x3x4xf32>)
// CHECK:           memref.load %{{.*}}[%{{.*}}] : memref<4xf32>

// -----

// graph.layer_normalization_stats is LayerNorm's kernel that also stores each row's mean and
// inverse standard deviation, viewed as one value per row.
func.func @layer_norm_stats(%x: tensor<3x40xf32>, %s: tensor<40xf32>) -> (tensor<3x40xf32>, tensor<3x1xf32>, tensor<3x1xf32>) {
  %y, %mean, %inv = graph.layer_normalization_stats(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<3x40xf32>, tensor<40xf32>) -> (tensor<3x40xf32>, tensor<3x1xf32>, tensor<3x1xf32>)
  func.return %y, %mean, %inv : tensor<3x40xf32>, tensor<3x1xf32>, tensor<3x1xf32>
}
// CHECK-LABEL: func.func private @layer_normalization_stats_0(
// CHECK-SAME:      %[[X:.*]]: memref<3x40xf32>, %[[S:.*]]: memref<40xf32>, %[[Y:.*]]: memref<3x40xf32>, %[[M:.*]]: memref<3x1xf32>, %[[I:.*]]: memref<3x1xf32>)
// CHECK:           scf.for %[[R:.*]] = {{.*}} {
// CHECK:             %[[MEAN:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:             %[[INV:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:        memref.store %[[MEAN]], %{{.*}}[%[[R]]] : memref<3xf32>
// CHECK-NEXT:        memref.store %[[INV]], %{{.*}}[%[[R]]] : memref<3xf32>
// CHECK:           } {onnxc.parallel}
