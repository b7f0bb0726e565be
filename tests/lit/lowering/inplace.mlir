// RUN: onnxc-opt %s -p inplace --split-input-file | filecheck %s

// A chain of marked elementwise calls runs in one buffer: each result takes over the
// buffer of an intermediate operand that no later op reads.

func.func private @relu(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {onnxc.kernel = "graph.relu"} {
  func.return
}
func.func @main(%in: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {onnxc.entry} {
  %a = memref.alloc() : memref<4x8xf32>
  func.call @relu(%in, %a) {onnxc.inplace_operands = [0 : i64]} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %b = memref.alloc() : memref<4x8xf32>
  func.call @relu(%a, %b) {onnxc.inplace_operands = [0 : i64]} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %c = memref.alloc() : memref<4x8xf32>
  func.call @relu(%b, %c) {onnxc.inplace_operands = [0 : i64]} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.call @relu(%c, %out) {onnxc.inplace_operands = [0 : i64]} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.return
}

// The in-place variant is the kernel with its result argument merged into the operand's, so
// one pointer is read and written (kernel arguments stay `noalias`). The model input %in is
// never overwritten, nor is the output argument given up.
// CHECK:       func.func private @relu_inplace0(%x: memref<4x8xf32>) attributes {onnxc.kernel = "graph.relu"}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %a = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT:    func.call @relu(%in, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
// CHECK-NEXT:    func.call @relu_inplace0(%a) : (memref<4x8xf32>) -> ()
// CHECK-NEXT:    func.call @relu_inplace0(%a) : (memref<4x8xf32>) -> ()
// CHECK-NEXT:    func.call @relu(%a, %out) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
// CHECK-NOT:     memref.alloc

// -----

func.func private @add(%x: memref<4x8xf32>, %z: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {onnxc.kernel = "graph.add"} {
  func.return
}
func.func private @relu(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {onnxc.kernel = "graph.relu"} {
  func.return
}
func.func @keeps_live_operand(%in: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {onnxc.entry} {
  %a = memref.alloc() : memref<4x8xf32>
  func.call @relu(%in, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %v = memref.reinterpret_cast %a to offset: [0], sizes: [32], strides: [1] : memref<4x8xf32> to memref<32xf32>
  %b = memref.alloc() : memref<4x8xf32>
  func.call @relu(%a, %b) {onnxc.inplace_operands = [0 : i64]} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %c = memref.alloc() : memref<4x8xf32>
  func.call @add(%b, %a, %c) {onnxc.inplace_operands = [0 : i64, 1 : i64]} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.call @add(%c, %c, %out) {onnxc.inplace_operands = [0 : i64, 1 : i64]} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.return
}

// %a is read again by the add, so the relu cannot write over it; the add may take %b.
// CHECK-LABEL: func.func @keeps_live_operand
// CHECK:         %b = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT:    func.call @relu(%a, %b) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
// CHECK-NEXT:    func.call @add_inplace0(%b, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
