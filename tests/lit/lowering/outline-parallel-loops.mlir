// RUN: onnxc-opt %s -p 'outline-parallel-loops{num-threads=2 min-parallel-ops=0}' --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p outline-parallel-loops --split-input-file | filecheck %s --check-prefix=SERIAL
// RUN: onnxc-opt %s -p 'outline-parallel-loops{num-threads=2}' --split-input-file | filecheck %s --check-prefix=WORK

// The outermost marked loop becomes a body function over [lo, hi) and a par.launch.
// Constants and views are recomputed in the body (so each captured memref is a root
// buffer); the marked inner loop runs serially there; the launch takes LLVM-typed values.
func.func private @scale(%x: memref<64x32xf32>, %y: memref<64x32xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %v = memref.reinterpret_cast %y to offset: [0], sizes: [2048], strides: [1] : memref<64x32xf32> to memref<2048xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x32xf32>
      %b = arith.mulf %a, %s : f32
      %k = arith.muli %i, %c32 : index
      %l = arith.addi %k, %j : index
      memref.store %b, %v[%l] : memref<2048xf32>
    } {onnxc.parallel}
  } {onnxc.parallel}
  func.return
}

// CHECK-LABEL: func.func private @scale(
// CHECK:         %[[LB:.*]] = builtin.unrealized_conversion_cast %c0 : index to i64
// CHECK-NEXT:    %[[UB:.*]] = builtin.unrealized_conversion_cast %c64 : index to i64
// CHECK-NEXT:    %[[STEP:.*]] = builtin.unrealized_conversion_cast %c1 : index to i64
// CHECK-NEXT:    %[[X:.*]] = builtin.unrealized_conversion_cast %x : memref<64x32xf32> to !llvm.ptr
// CHECK-NEXT:    %[[Y:.*]] = builtin.unrealized_conversion_cast %y : memref<64x32xf32> to !llvm.ptr
// CHECK-NEXT:    par.launch @scale_par0(%[[LB]], %[[UB]], %[[STEP]]) captures(%[[X]], %s, %[[Y]]) {threads = 2 : i64} : !llvm.ptr, f32, !llvm.ptr
// CHECK-NOT:     scf.for
// CHECK:         func.return
// CHECK-LABEL: func.func private @scale_par0(%lo: index, %hi: index, %x: memref<64x32xf32>, %s: f32, %y: memref<64x32xf32>) {
// CHECK-DAG:     %c1 = arith.constant 1 : index
// CHECK-DAG:     %c0 = arith.constant 0 : index
// CHECK-DAG:     %c32 = arith.constant 32 : index
// CHECK:         %v = memref.reinterpret_cast %y
// CHECK-NEXT:    scf.for %i = %lo to %hi step %c1 {
// CHECK-NEXT:      scf.for %j = %c0 to %c32 step %c1 {
// CHECK:             memref.store %b, %v[%l] : memref<2048xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NOT:   onnxc.parallel

// SERIAL-LABEL: func.func private @scale(
// SERIAL:         scf.for %i = %c0 to %c64 step %c1 {
// SERIAL:           scf.for %j = %c0 to %c32 step %c1 {
// SERIAL-NOT:     onnxc.parallel
// SERIAL-NOT:     par.launch

// -----

// Stack scratch hoisted to the kernel entry becomes private to each thread; dynamic bounds
// are passed through; a body function per marked loop, numbered within its kernel.
func.func private @rows(%x: memref<16x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %tmp = memref.alloca() : memref<8xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %x[%i, %j] : memref<16x8xf32>
      memref.store %a, %tmp[%j] : memref<8xf32>
    }
  } {onnxc.parallel}
  scf.for %i = %c1 to %n step %c1 {
    %a = memref.load %x[%i, %c0] : memref<16x8xf32>
    memref.store %a, %x[%i, %c1] : memref<16x8xf32>
  } {onnxc.parallel}
  func.return
}

// CHECK-LABEL: func.func private @rows(
// CHECK:         par.launch @rows_par0(%{{.*}}, %{{.*}}, %{{.*}}) captures(%{{.*}}) {threads = 2 : i64} : !llvm.ptr
// CHECK:         par.launch @rows_par1(%{{.*}}, %{{.*}}, %{{.*}}) captures(%{{.*}}) {threads = 2 : i64} : !llvm.ptr
// CHECK-LABEL: func.func private @rows_par0(%lo: index, %hi: index, %x: memref<16x8xf32>) {
// CHECK:         %tmp = memref.alloca() : memref<8xf32>
// CHECK:         scf.for %i = %lo to %hi step %c1 {
// CHECK:             memref.store %a, %tmp[%j] : memref<8xf32>
// CHECK-LABEL: func.func private @rows_par1(%lo: index, %hi: index, %x: memref<16x8xf32>) {
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for %i = %lo to %hi step %c1 {

// -----

// Not outlined (the marker is dropped): one static iteration, and loop-carried values.
func.func private @serial(%x: memref<4xf32>, %s: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %s, %x[%i] : memref<4xf32>
  } {onnxc.parallel}
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %s) -> (f32) {
    %a = memref.load %x[%i] : memref<4xf32>
    %b = arith.addf %acc, %a : f32
    scf.yield %b : f32
  } {onnxc.parallel}
  func.return %r : f32
}

// CHECK-LABEL: func.func private @serial(
// CHECK:         scf.for %i = %c0 to %c1 step %c1 {
// CHECK:         scf.for %i_1 = %c0 to %c4 step %c1 iter_args(%acc = %s) -> (f32) {
// CHECK-NOT:     par.launch
// CHECK-NOT:     onnxc.parallel
// CHECK:         func.return %r : f32

// -----

// The work threshold (min-parallel-ops, default 6000): @small's loop does 16 x 32 x 5 =
// 2,560 ops and stays serial; @large's 512 x 32 x 5 = 81,920 ops is launched. A loop with
// a trip count known only at run time counts as large.
func.func private @small(%x: memref<16x32xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %a = memref.load %x[%i, %j] : memref<16x32xf32>
      %b = arith.mulf %a, %s : f32
      %c = arith.addf %b, %s : f32
      %d = arith.mulf %c, %s : f32
      memref.store %d, %x[%i, %j] : memref<16x32xf32>
    }
  } {onnxc.parallel}
  func.return
}

func.func private @large(%x: memref<512x32xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %a = memref.load %x[%i, %j] : memref<512x32xf32>
      %b = arith.mulf %a, %s : f32
      %c = arith.addf %b, %s : f32
      %d = arith.mulf %c, %s : f32
      memref.store %d, %x[%i, %j] : memref<512x32xf32>
    }
  } {onnxc.parallel}
  func.return
}

func.func private @runtime_trips(%x: memref<?xf32>, %n: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %x[%i] : memref<?xf32>
    %b = arith.mulf %a, %s : f32
    memref.store %b, %x[%i] : memref<?xf32>
  } {onnxc.parallel}
  func.return
}

// WORK-LABEL: func.func private @small(
// WORK-NOT:     par.launch
// WORK:         scf.for
// WORK-NOT:     onnxc.parallel
// WORK:         func.return
// WORK-LABEL: func.func private @large(
// WORK:         par.launch @large_par0
// WORK-LABEL: func.func private @runtime_trips(
// WORK:         par.launch @runtime_trips_par0
