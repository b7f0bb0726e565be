// RUN: onnxc-opt %s -p convert-func-to-llvm --split-input-file | filecheck %s

// Kernels: private -> internal linkage, memref arguments -> noalias !llvm.ptr,
// onnxc.kernel -> no_inline. Not-yet-converted users see the old types through casts.
func.func private @relu_0(%x: memref<8xf32>, %y: memref<8xf32>) attributes {onnxc.kernel = "graph.relu"} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<8xf32>
  memref.store %v, %y[%c0] : memref<8xf32>
  func.return
}

// CHECK-LABEL: llvm.func internal @relu_0(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias})
// CHECK-SAME:      attributes {onnxc.kernel = "graph.relu", no_inline} {
// CHECK-NEXT:   %x_1 = builtin.unrealized_conversion_cast %x : !llvm.ptr to memref<8xf32>
// CHECK-NEXT:   %y_1 = builtin.unrealized_conversion_cast %y : !llvm.ptr to memref<8xf32>
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %v = memref.load %x_1[%c0] : memref<8xf32>
// CHECK-NEXT:   memref.store %v, %y_1[%c0] : memref<8xf32>
// CHECK-NEXT:   llvm.return
// CHECK-NEXT: }

// -----

// The entry point keeps its name, external linkage and attributes; calls and scalar
// returns convert; private declarations stay external.
func.func private @erff(f32) -> f32
func.func @main(%in: memref<4xf32>, %n: index, %s: f32) -> f32 attributes {onnxc.entry} {
  %r = func.call @erff(%s) : (f32) -> f32
  %k = func.call @scale(%n) : (index) -> index
  func.return %r : f32
}
func.func @scale(%n: index) -> index {
  func.return %n : index
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:   llvm.func @erff(f32) -> f32
// CHECK-NEXT:   llvm.func @main(%in: !llvm.ptr {llvm.noalias}, %n: i64, %s: f32) -> f32 attributes {onnxc.entry} {
// CHECK-NEXT:     %n_1 = builtin.unrealized_conversion_cast %n : i64 to index
// CHECK-NEXT:     %r = llvm.call @erff(%s) : (f32) -> f32
// CHECK-NEXT:     %k = llvm.call @scale(%n) : (i64) -> i64
// CHECK-NEXT:     %k_1 = builtin.unrealized_conversion_cast %k : i64 to index
// CHECK-NEXT:     llvm.return %r : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   llvm.func @scale([[N:%.*]]: i64) -> i64 {
// CHECK-NEXT:     %{{.*}} = builtin.unrealized_conversion_cast [[N]] : i64 to index
// CHECK-NEXT:     llvm.return [[N]] : i64
// CHECK-NEXT:   }
