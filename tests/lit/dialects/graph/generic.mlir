// RUN: ONNXC_GENERIC_ROUNDTRIP
// RUN: onnxc-opt %s --split-input-file | filecheck %s

// The generic form of graph ops: properties in `<{...}>`, optional operands and variadic
// results; it parses back to the same ops (checked in generic form by the first RUN line,
// and in custom syntax by the second).

%x, %w, %b = "test.op"() : () -> (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>)
%0 = "graph.conv"(%x, %w, %b) <{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
%1 = "graph.conv"(%x, %w) <{strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
%2, %3 = "graph.split"(%0) <{axis = 1 : i64}> : (tensor<1x4x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x3x5x5xf32>)
%4 = "graph.sum"(%2, %3, %3) : (tensor<1x1x5x5xf32>, tensor<1x3x5x5xf32>, tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
%5 = "graph.constant"() <{value = dense<2.500000e-01> : tensor<4xf32>}> : () -> tensor<4xf32>

// CHECK-GENERIC:       "builtin.module"() ({
// CHECK-GENERIC-NEXT:    %x, %w, %b = "test.op"() : () -> (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>)
// CHECK-GENERIC-NEXT:    %0 = "graph.conv"(%x, %w, %b) <{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
// CHECK-GENERIC-NEXT:    %1 = "graph.conv"(%x, %w) <{strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
// CHECK-GENERIC-NEXT:    %2, %3 = "graph.split"(%0) <{axis = 1 : i64}> : (tensor<1x4x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x3x5x5xf32>)
// CHECK-GENERIC-NEXT:    %4 = "graph.sum"(%2, %3, %3) : (tensor<1x1x5x5xf32>, tensor<1x3x5x5xf32>, tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
// CHECK-GENERIC-NEXT:    %5 = "graph.constant"() <{value = dense<2.500000e-01> : tensor<4xf32>}> : () -> tensor<4xf32>
// CHECK-GENERIC-NEXT:  }) : () -> ()

// CHECK:       builtin.module {
// CHECK-NEXT:    %x, %w, %b = "test.op"() : () -> (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>)
// CHECK-NEXT:    %0 = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
// CHECK-NEXT:    %1 = graph.conv(%x, %w) {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    %2, %3 = graph.split(%0) {axis = 1 : i64} : (tensor<1x4x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x3x5x5xf32>)
// CHECK-NEXT:    %4 = graph.sum(%2, %3, %3) : (tensor<1x1x5x5xf32>, tensor<1x3x5x5xf32>, tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
// CHECK-NEXT:    %5 = graph.constant {value = dense<2.500000e-01> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT:  }
