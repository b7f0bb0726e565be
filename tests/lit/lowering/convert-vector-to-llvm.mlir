// RUN: onnxc-opt %s -p convert-vector-to-llvm | filecheck %s

%m, %i, %s = "test.op"() : () -> (memref<4x32xf32>, index, f32)
%v = vector.load %m[%i, %i] : memref<4x32xf32>, vector<16xf32>
%b = vector.broadcast %s : f32 to vector<16xf32>
%r = vector.fma %v, %b, %v : vector<16xf32>
vector.store %r, %m[%i, %i] : memref<4x32xf32>, vector<16xf32>

// CHECK:      %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %[[Q:.*]] = llvm.getelementptr inbounds %[[P]][0] : (!llvm.ptr) -> !llvm.ptr, vector<16xf32>
// CHECK-NEXT: %[[V:.*]] = llvm.load %[[Q]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK-NEXT: %[[U:.*]] = llvm.mlir.undef : vector<16xf32>
// CHECK-NEXT: %[[Z:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[I:.*]] = llvm.insertelement %s, %[[U]][%[[Z]] : i32] : vector<16xf32>
// CHECK-NEXT: %[[B:.*]] = llvm.shufflevector %[[I]], %[[U]] [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] : vector<16xf32>
// CHECK-NEXT: %r = llvm.intr.fma(%[[V]], %[[B]], %[[V]]) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:      llvm.store %r, %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
