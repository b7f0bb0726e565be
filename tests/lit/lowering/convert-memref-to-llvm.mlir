// RUN: onnxc-opt %s -p convert-memref-to-llvm --split-input-file | filecheck %s

// A load is a GEP on the row-major linear index (static strides) and an aligned load.
%m, %i, %j = "test.op"() : () -> (memref<4x8xf32>, index, index)
%v = memref.load %m[%i, %j] : memref<4x8xf32>
memref.store %v, %m[%j, %i] : memref<4x8xf32>

// CHECK-LABEL: builtin.module {
// CHECK:      %m_1 = builtin.unrealized_conversion_cast %m : memref<4x8xf32> to !llvm.ptr
// CHECK-NEXT: %i_1 = builtin.unrealized_conversion_cast %i : index to i64
// CHECK-NEXT: %j_1 = builtin.unrealized_conversion_cast %j : index to i64
// CHECK-NEXT: %v = llvm.mlir.constant(8) : i64
// CHECK-NEXT: %v_1 = llvm.mul %i_1, %v overflow<nsw> : i64
// CHECK-NEXT: %v_2 = llvm.add %v_1, %j_1 overflow<nsw> : i64
// CHECK-NEXT: %v_3 = llvm.getelementptr inbounds %m_1[%v_2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %v_4 = llvm.load %v_3 {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:      [[ROW:%.*]] = llvm.mul %j_2, %{{.*}} overflow<nsw> : i64
// CHECK-NEXT: [[LIN:%.*]] = llvm.add [[ROW]], %i_2 overflow<nsw> : i64
// CHECK-NEXT: [[PTR:%.*]] = llvm.getelementptr inbounds %m_2[[[LIN]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: llvm.store %v_4, [[PTR]] {alignment = 4 : i64} : f32, !llvm.ptr

// -----

// Rank-0 memrefs need no GEP; i1 elements are bytes in memory, loaded and stored as bytes
// (a vectorized loop of i1 stores would pack bits).
%m = "test.op"() : () -> memref<i1>
%b = memref.load %m[] : memref<i1>
memref.store %b, %m[] : memref<i1>

// CHECK-LABEL: builtin.module {
// CHECK:      %m_1 = builtin.unrealized_conversion_cast %m : memref<i1> to !llvm.ptr
// CHECK-NEXT: %b = llvm.load %m_1 {alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK-NEXT: %b_1 = llvm.trunc %b : i8 to i1
// CHECK:      [[BYTE:%.*]] = llvm.zext %b_1 : i1 to i8
// CHECK-NEXT: llvm.store [[BYTE]], %{{.*}} {alignment = 1 : i64} : i8, !llvm.ptr

// -----

// The static offset of a strided layout is added to the linear index.
%m, %i = "test.op"() : () -> (memref<2x2xf64, strided<[4, 1], offset: 3>>, index)
%v = memref.load %m[%i, %i] : memref<2x2xf64, strided<[4, 1], offset: 3>>

// CHECK-LABEL: builtin.module {
// CHECK:      %v = llvm.mlir.constant(4) : i64
// CHECK-NEXT: %v_1 = llvm.mul %i_1, %v overflow<nsw> : i64
// CHECK-NEXT: %v_2 = llvm.add %v_1, %i_1 overflow<nsw> : i64
// CHECK-NEXT: %v_3 = llvm.mlir.constant(3) : i64
// CHECK-NEXT: %v_4 = llvm.add %v_2, %v_3 overflow<nsw> : i64
// CHECK-NEXT: %v_5 = llvm.getelementptr inbounds %m_1[%v_4] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT: %v_6 = llvm.load %v_5 {alignment = 8 : i64} : !llvm.ptr -> f64

// -----

// view: a byte offset into the i8 arena; reinterpret_cast and cast keep the base pointer.
%arena, %shift = "test.op"() : () -> (memref<256xi8>, index)
%t = memref.view %arena[%shift][] : memref<256xi8> to memref<2x3xf32>
%r = memref.reinterpret_cast %t to offset: [0], sizes: [6], strides: [1] : memref<2x3xf32> to memref<6xf32>
%c = "memref.cast"(%r) : (memref<6xf32>) -> memref<6xf32>
"test.op"(%c) : (memref<6xf32>) -> ()

// CHECK-LABEL: builtin.module {
// CHECK:      %arena_1 = builtin.unrealized_conversion_cast %arena : memref<256xi8> to !llvm.ptr
// CHECK-NEXT: %shift_1 = builtin.unrealized_conversion_cast %shift : index to i64
// CHECK-NEXT: %t = llvm.getelementptr inbounds %arena_1[%shift_1] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT: %t_1 = builtin.unrealized_conversion_cast %t : !llvm.ptr to memref<2x3xf32>
// CHECK-NEXT: %t_2 = builtin.unrealized_conversion_cast %t : !llvm.ptr to memref<6xf32>
// CHECK-NEXT: %t_3 = builtin.unrealized_conversion_cast %t : !llvm.ptr to memref<6xf32>
// CHECK-NEXT: "test.op"(%t_3) : (memref<6xf32>) -> ()

// -----

// A static alloca is an llvm.alloca of the element count.
%a = memref.alloca() : memref<4x4xf32>
"test.op"(%a) : (memref<4x4xf32>) -> ()

// CHECK-LABEL: builtin.module {
// CHECK:      %a = llvm.mlir.constant(16) : i64
// CHECK-NEXT: %a_1 = llvm.alloca %a x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr

// -----

// A flat memref<?xf32> (a tensor with symbolic dimensions) is a bare pointer like any other:
// its run-time size and a view's run-time sizes are not part of it; the view of the dynamic
// arena is the pointer a run-time byte offset into it.
%m, %n, %i, %arena, %off = "test.op"() : () -> (memref<?xf32>, index, index, memref<?xi8>, index)
%flat = memref.reinterpret_cast %m to offset: [0], sizes: [%n], strides: [1] : memref<?xf32> to memref<?xf32>
%v = memref.load %flat[%i] : memref<?xf32>
%buf = memref.view %arena[%off][%n] : memref<?xi8> to memref<?xf32>
memref.store %v, %buf[%i] : memref<?xf32>

// CHECK-LABEL: builtin.module {
// CHECK:      %m_1 = builtin.unrealized_conversion_cast %m : memref<?xf32> to !llvm.ptr
// CHECK:      %v = llvm.getelementptr inbounds %m_1[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %v_1 = llvm.load %v {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:      %buf = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.getelementptr inbounds %buf
