// RUN: onnxc-opt %s -p bind-constants | filecheck %s

// A kernel argument the body never reads and every call passes a constant (the NHWC conv's
// original weight, which it only takes packed) leaves the kernel and its calls, and the
// constant is not bound. Arguments that are read, or passed a non-constant, stay.

"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<4xf32>, initial_value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "packed", sym_visibility = "private", type = memref<4xf32>, initial_value = dense<[1.0, 3.0, 2.0, 4.0]> : tensor<4xf32>, constant}> : () -> ()
func.func private @conv(%x: memref<4xf32>, %w: memref<4xf32>, %unread: memref<4xf32>, %p: memref<4xf32>, %y: memref<4xf32>) attributes {onnxc.kernel = "graph.conv"} {
  %i = arith.constant 0 : index
  %v = memref.load %p[%i] : memref<4xf32>
  memref.store %v, %y[%i] : memref<4xf32>
  func.return
}
func.func @main(%in: memref<4xf32>, %out: memref<4xf32>) attributes {onnxc.entry} {
  %w = memref.get_global @w : memref<4xf32>
  %p = memref.get_global @packed : memref<4xf32>
  func.call @conv(%in, %w, %in, %p, %out) : (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func private @conv
// CHECK-SAME:    (%x: memref<4xf32>, %unread: memref<4xf32>, %p: memref<4xf32>, %y: memref<4xf32>)
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%in: memref<4xf32>, %out: memref<4xf32>, %packed: memref<4xf32>)
// CHECK-SAME:    onnxc.constants = ["packed"]
// CHECK-NEXT:    func.call @conv(%in, %in, %packed, %out)
// CHECK-NOT:     memref.get_global
