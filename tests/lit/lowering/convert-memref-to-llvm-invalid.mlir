// RUN: onnxc-opt %s -p convert-memref-to-llvm --split-input-file --verify-diagnostics | filecheck %s

// Heap memory and globals must be gone (plan-memory, bind-constants) before this pass.

func.func @alloc() {
  %t = memref.alloc() : memref<4xf32>
  func.return
}

// CHECK: 'memref.alloc' has no LLVM lowering: run plan-memory first

// -----

"memref.global"() <{sym_name = "cst", sym_visibility = "private", type = memref<2xf32>, initial_value = dense<[1.0, 2.0]> : tensor<2xf32>, constant}> : () -> ()
func.func @get_global() {
  %w = memref.get_global @cst : memref<2xf32>
  func.return
}

// CHECK: has no LLVM lowering: run bind-constants first

// -----

// A flat memref<?x..> is a bare pointer (kernels address symbolic shapes through one); a
// multi-dimensional one with a `?` has run-time strides a bare pointer does not carry.

func.func @dynamic(%m: memref<4x?xf32>, %i: index) -> f32 {
  %v = memref.load %m[%i, %i] : memref<4x?xf32>
  func.return %v : f32
}

// CHECK: 'memref.load': only static shapes and layouts, and flat memref<?x..> buffers, are supported (memref<4x?xf32>)
