// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops | filecheck %s

// The entry function of convert-graph-to-loops: results become trailing memref arguments,
// intermediates memref.alloc, constants globals, reshape-like ops views, and every other op
// a call to a private kernel emitted once per (op, properties, types).

// A graph output computed by a kernel is written straight into its output argument; the
// function attributes are kept and the public function is marked as the entry.
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {onnxc.input_names = ["x"], onnxc.output_names = ["y"]} {
  %y = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK:       builtin.module {
// CHECK-NEXT:    func.func private @relu_0(%0: memref<2x3xf32>, %1: memref<2x3xf32>) attributes {onnxc.kernel = "graph.relu"} {
// CHECK:         func.func @main(%x: memref<2x3xf32>, %out0: memref<2x3xf32>) attributes {onnxc.input_names = ["x"], onnxc.output_names = ["y"], onnxc.entry} {
// CHECK-NEXT:      func.call @relu_0(%x, %out0) {onnxc.inplace_operands = [0 : i64]} : (memref<2x3xf32>, memref<2x3xf32>) -> ()
// CHECK-NEXT:      func.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Identical ops share one kernel; intermediates are allocated.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.sigmoid(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.sigmoid(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %c = graph.add(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = graph.sigmoid(%c) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// CHECK:         func.func private @sigmoid_0(%0: memref<4xf32>, %1: memref<4xf32>) attributes {onnxc.kernel = "graph.sigmoid"} {
// CHECK:         func.func private @add_0(%0: memref<4xf32>, %1: memref<4xf32>, %2: memref<4xf32>) attributes {onnxc.kernel = "graph.add"} {
// CHECK-NOT:     func.func private
// CHECK:         func.func @main(%x: memref<4xf32>, %out0: memref<4xf32>) attributes {onnxc.entry} {
// CHECK-NEXT:      %a = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      func.call @sigmoid_0(%x, %a) {onnxc.inplace_operands = [0 : i64]} : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      %b = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      func.call @sigmoid_0(%a, %b) {onnxc.inplace_operands = [0 : i64]} : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      %c = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      func.call @add_0(%a, %b, %c) {onnxc.inplace_operands = [0 : i64, 1 : i64]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      func.call @sigmoid_0(%c, %out0) {onnxc.inplace_operands = [0 : i64]} : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      func.return

// -----

// Reshape-like ops are views of the same buffer; the kernel whose result reaches an
// output only through views writes into a view of the output argument.
func.func @main(%x: tensor<1x2x2x2xf32>) -> tensor<1x8xf32> {
  %r = graph.relu(%x) : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %s = graph.squeeze(%r) {axes = array<i64: 0>} : (tensor<1x2x2x2xf32>) -> tensor<2x2x2xf32>
  %f = graph.flatten(%s) {axis = 0 : i64} : (tensor<2x2x2xf32>) -> tensor<1x8xf32>
  func.return %f : tensor<1x8xf32>
}

// CHECK-LABEL:   func.func @main(%x: memref<1x2x2x2xf32>, %out0: memref<1x8xf32>) attributes {onnxc.entry} {
// CHECK-NEXT:      %r = memref.reinterpret_cast %out0 to offset: [0], sizes: [1, 2, 2, 2], strides: [8, 4, 2, 1] : memref<1x8xf32> to memref<1x2x2x2xf32>
// CHECK-NEXT:      func.call @relu_0(%x, %r) {onnxc.inplace_operands = [0 : i64]} : (memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) -> ()
// CHECK-NEXT:      %s = memref.reinterpret_cast %out0 to offset: [0], sizes: [2, 2, 2], strides: [4, 2, 1] : memref<1x8xf32> to memref<2x2x2xf32>
// CHECK-NEXT:      func.return

// -----

// Outputs that would alias an input, a constant or another output get (flat) copies.
func.func @main(%x: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %v = graph.reshape(%x) : (tensor<2x2xf32>) -> tensor<4xf32>
  %c = graph.constant {value = dense<[3, 4]> : tensor<2xi64>} : tensor<2xi64>
  %n = graph.neg(%x) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %v, %c, %n, %n : tensor<4xf32>, tensor<2xi64>, tensor<2x2xf32>, tensor<2x2xf32>
}

// CHECK:         "memref.global"() <{sym_name = "cst_0", type = memref<2xi64>, initial_value = dense<[3, 4]> : tensor<2xi64>, sym_visibility = "private", constant}> : () -> ()
// CHECK:         func.func private @identity_0(%0: memref<4xf32>, %1: memref<4xf32>) attributes {onnxc.kernel = "graph.identity"} {
// CHECK:         func.func private @identity_1(%0: memref<2xi64>, %1: memref<2xi64>) attributes {onnxc.kernel = "graph.identity"} {
// CHECK-LABEL:   func.func @main(%x: memref<2x2xf32>, %out0: memref<4xf32>, %out1: memref<2xi64>, %out2: memref<2x2xf32>, %out3: memref<2x2xf32>) attributes {onnxc.entry} {
// CHECK-NEXT:      %v = memref.reinterpret_cast %x to offset: [0], sizes: [4], strides: [1] : memref<2x2xf32> to memref<4xf32>
// CHECK-NEXT:      %c = memref.get_global @cst_0 : memref<2xi64>
// CHECK-NEXT:      func.call @neg_0(%x, %out2)
// CHECK-NEXT:      func.call @identity_0(%v, %out0)
// CHECK-NEXT:      func.call @identity_1(%c, %out1)
// CHECK-NEXT:      %[[SRC:.*]] = memref.reinterpret_cast %out2 to offset: [0], sizes: [4], strides: [1]
// CHECK-NEXT:      %[[DST:.*]] = memref.reinterpret_cast %out3 to offset: [0], sizes: [4], strides: [1]
// CHECK-NEXT:      func.call @identity_0(%[[SRC]], %[[DST]])
// CHECK-NEXT:      func.return

// -----

// Constants become private constant globals, equal ones shared; graph.shape is static, so
// it is a constant too.
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xi64>) {
  %a = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %s = graph.add(%x, %a) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t = graph.mul(%s, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %shape = graph.shape(%t) {start = 0 : i64, end = 2 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>
  func.return %t, %shape : tensor<2x3xf32>, tensor<2xi64>
}

// CHECK:         "memref.global"() <{sym_name = "cst_0", type = memref<3xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>, sym_visibility = "private", constant}> : () -> ()
// CHECK-NEXT:    "memref.global"() <{sym_name = "cst_1", type = memref<2xi64>, initial_value = dense<[2, 3]> : tensor<2xi64>, sym_visibility = "private", constant}> : () -> ()
// CHECK-LABEL:   func.func @main
// CHECK-NEXT:      %a = memref.get_global @cst_0 : memref<3xf32>
// CHECK-NEXT:      %b = memref.get_global @cst_0 : memref<3xf32>
// CHECK-NEXT:      %s = memref.alloc() : memref<2x3xf32>
// CHECK-NEXT:      func.call @add_0(%x, %a, %s)
// CHECK-NEXT:      func.call @mul_0(%s, %b, %out0)
// CHECK-NEXT:      %shape = memref.get_global @cst_1 : memref<2xi64>
// CHECK-NEXT:      func.call @identity_0(%shape, %out1)

// -----

// Private graph functions are lowered but are not entries; functions without graph ops or
// tensors are left alone.
func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.exp(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
func.func @other(%i: index) -> index {
  func.return %i : index
}

// CHECK:         func.func private @exp_0(%0: memref<2xf32>, %1: memref<2xf32>) attributes {onnxc.kernel = "graph.exp"} {
// CHECK:         func.func private @helper(%x: memref<2xf32>, %out0: memref<2xf32>) {
// CHECK-NEXT:      func.call @exp_0(%x, %out0)
// CHECK:         func.func @other(%i: index) -> index {
// CHECK-NEXT:      func.return %i : index
