// RUN: onnxc-opt %s -p bind-constants | filecheck %s

// Each global read by the entry function becomes one trailing argument (once, however often
// it is read), listed in onnxc.constants; the globals themselves are gone.

"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2xf32>, initial_value = dense<[1.0, 2.0]> : tensor<2xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "b", sym_visibility = "private", type = memref<2xf32>, initial_value = dense<[3.0, 4.0]> : tensor<2xf32>, constant}> : () -> ()
func.func private @add(%x: memref<2xf32>, %y: memref<2xf32>, %z: memref<2xf32>) attributes {onnxc.kernel = "graph.add"} {
  %i = arith.constant 0 : index
  %v = memref.load %y[%i] : memref<2xf32>
  memref.store %v, %z[%i] : memref<2xf32>
  func.return
}
func.func @main(%in: memref<2xf32>, %out: memref<2xf32>) attributes {onnxc.entry} {
  %w = memref.get_global @w : memref<2xf32>
  %t = memref.alloc() : memref<2xf32>
  func.call @add(%in, %w, %t) : (memref<2xf32>, memref<2xf32>, memref<2xf32>) -> ()
  %w2 = memref.get_global @w : memref<2xf32>
  %b = memref.get_global @b : memref<2xf32>
  func.call @add(%t, %b, %out) : (memref<2xf32>, memref<2xf32>, memref<2xf32>) -> ()
  func.call @add(%t, %w2, %out) : (memref<2xf32>, memref<2xf32>, memref<2xf32>) -> ()
  func.return
}

// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%in: memref<2xf32>, %out: memref<2xf32>, %w: memref<2xf32>, %b: memref<2xf32>)
// CHECK-SAME:    onnxc.constants = ["w", "b"]
// CHECK-NEXT:    %t = memref.alloc() : memref<2xf32>
// CHECK-NEXT:    func.call @add(%in, %w, %t)
// CHECK-NEXT:    func.call @add(%t, %b, %out)
// CHECK-NEXT:    func.call @add(%t, %w, %out)
// CHECK-NOT:     memref.get_global
