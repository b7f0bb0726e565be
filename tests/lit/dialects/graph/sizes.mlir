// RUN: onnxc-opt %s --split-input-file | filecheck %s
// RUN: onnxc-opt %s --split-input-file | onnxc-opt --split-input-file | filecheck %s

// Symbolic sizes are expressions (dialects/symbolic_dims.py): floor division, min and max
// over size symbols, printed in their canonical form (ceildiv(h, 2) is floordiv(h+1, 2)),
// in tensor types and in `#graph.sizes` properties (a Slice between two sizes).

func.func @conv_sizes(%x: tensor<1x3x?x?xf32, #graph.dims<["h", "w"]>>, %k: tensor<8x3x3x3xf32>) -> tensor<1x8x?x?xf32, #graph.dims<["ceildiv(h, 2)", "floordiv(w+1, 2)"]>> {
  %y = graph.conv(%x, %k) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x?x?xf32, #graph.dims<["h", "w"]>>, tensor<8x3x3x3xf32>) -> tensor<1x8x?x?xf32, #graph.dims<["floordiv(h+1, 2)", "floordiv(w+1, 2)"]>>
  func.return %y : tensor<1x8x?x?xf32, #graph.dims<["floordiv(h+1, 2)", "floordiv(w+1, 2)"]>>
}

// CHECK-LABEL: func.func @conv_sizes(
// CHECK-SAME:      -> tensor<1x8x?x?xf32, #graph.dims<["floordiv(h+1, 2)", "floordiv(w+1, 2)"]>>
// CHECK-NEXT:    %y = graph.conv(%x, %k)
// CHECK-SAME:      -> tensor<1x8x?x?xf32, #graph.dims<["floordiv(h+1, 2)", "floordiv(w+1, 2)"]>>

// -----

func.func @slice_sizes(%x: tensor<1x?x4xf32, #graph.dims<["total"]>>) -> tensor<1x?x4xf32, #graph.dims<["min(past+seq, total)-min(past, total)"]>> {
  %y = graph.slice(%x) {starts = #graph.sizes<["past"]>, ends = #graph.sizes<["past+seq"]>, axes = array<i64: 1>, steps = array<i64: 1>} : (tensor<1x?x4xf32, #graph.dims<["total"]>>) -> tensor<1x?x4xf32, #graph.dims<["min(past+seq, total)-min(past, total)"]>>
  func.return %y : tensor<1x?x4xf32, #graph.dims<["min(past+seq, total)-min(past, total)"]>>
}

// CHECK-LABEL: func.func @slice_sizes(
// CHECK-NEXT:    %y = graph.slice(%x) {starts = #graph.sizes<["past"]>, ends = #graph.sizes<["past+seq"]>, axes = array<i64: 1>, steps = array<i64: 1>} : (tensor<1x?x4xf32, #graph.dims<["total"]>>) -> tensor<1x?x4xf32, #graph.dims<["min(past+seq, total)-min(past, total)"]>>

// -----

func.func @last_rows(%x: tensor<?x4xf32, #graph.dims<["seq"]>>) -> tensor<?x4xf32, #graph.dims<["min(2, seq)"]>> {
  %y = graph.slice(%x) {starts = array<i64: -2>, ends = array<i64: 9223372036854775807>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<?x4xf32, #graph.dims<["seq"]>>) -> tensor<?x4xf32, #graph.dims<["seq+1-max(1, seq-1)"]>>
  func.return %y : tensor<?x4xf32, #graph.dims<["min(2, seq)"]>>
}

// CHECK-LABEL: func.func @last_rows(
// CHECK-NEXT:    %y = graph.slice(%x) {{.*}} -> tensor<?x4xf32, #graph.dims<["min(2, seq)"]>>

// -----

// OneHot's depth is a size: a number, or a run symbol the run binds (a depth input).
func.func @one_hot_depth(%i: tensor<?x3xi64, #graph.dims<["n"]>>, %v: tensor<2xf32>) -> tensor<?x?x3xf32, #graph.dims<["n", "d"]>> {
  %y = graph.one_hot(%i, %v) {depth = #graph.sizes<["d"]>, axis = 1 : i64} : (tensor<?x3xi64, #graph.dims<["n"]>>, tensor<2xf32>) -> tensor<?x?x3xf32, #graph.dims<["n", "d"]>>
  func.return %y : tensor<?x?x3xf32, #graph.dims<["n", "d"]>>
}

// CHECK-LABEL: func.func @one_hot_depth(
// CHECK-NEXT:    %y = graph.one_hot(%i, %v) {depth = #graph.sizes<["d"]>, axis = 1 : i64} : (tensor<?x3xi64, #graph.dims<["n"]>>, tensor<2xf32>) -> tensor<?x?x3xf32, #graph.dims<["n", "d"]>>
