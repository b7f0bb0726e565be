// RUN: onnxc-opt %s -p convert-arith-to-llvm --split-input-file | filecheck %s

%i, %j = "test.op"() : () -> (i32, i32)
%f, %g = "test.op"() : () -> (f32, f32)
%ci = arith.constant 7 : i32
%cf = arith.constant 1.5 : f32
%cx = arith.constant 4 : index
%cv = arith.constant dense<2.0> : vector<4xf32>
"test.op"(%ci, %cf, %cx, %cv) : (i32, f32, index, vector<4xf32>) -> ()

// CHECK-LABEL: builtin.module {
// CHECK:      %ci = llvm.mlir.constant(7 : i32) : i32
// CHECK-NEXT: %cf = llvm.mlir.constant(1.500000e+00 : f32) : f32
// CHECK-NEXT: %cx = llvm.mlir.constant(4) : i64
// CHECK-NEXT: %cx_1 = builtin.unrealized_conversion_cast %cx : i64 to index
// CHECK-NEXT: %cv = llvm.mlir.constant(dense<2.000000e+00> : vector<4xf32>) : vector<4xf32>
// CHECK-NEXT: "test.op"(%ci, %cf, %cx_1, %cv) : (i32, f32, index, vector<4xf32>) -> ()

// -----

%i, %j = "test.op"() : () -> (i32, i32)
%add = arith.addi %i, %j overflow<nsw> : i32
%sub = arith.subi %i, %j : i32
%mul = arith.muli %i, %j overflow<nsw, nuw> : i32
%sdiv = arith.divsi %i, %j : i32
%udiv = arith.divui %i, %j : i32
%srem = arith.remsi %i, %j : i32
%urem = arith.remui %i, %j : i32
%and = arith.andi %i, %j : i32
%or = arith.ori %i, %j : i32
%xor = arith.xori %i, %j : i32
%shl = arith.shli %i, %j : i32
%shrs = arith.shrsi %i, %j : i32
%shru = arith.shrui %i, %j : i32
%maxs = arith.maxsi %i, %j : i32
%mins = arith.minsi %i, %j : i32
%maxu = arith.maxui %i, %j : i32
%minu = arith.minui %i, %j : i32

// CHECK-LABEL: builtin.module {
// CHECK:      %add = llvm.add %i, %j overflow<nsw> : i32
// CHECK-NEXT: %sub = llvm.sub %i, %j : i32
// CHECK-NEXT: %mul = llvm.mul %i, %j overflow<nsw,nuw> : i32
// CHECK-NEXT: %sdiv = llvm.sdiv %i, %j : i32
// CHECK-NEXT: %udiv = llvm.udiv %i, %j : i32
// CHECK-NEXT: %srem = llvm.srem %i, %j : i32
// CHECK-NEXT: %urem = llvm.urem %i, %j : i32
// CHECK-NEXT: %and = llvm.and %i, %j : i32
// CHECK-NEXT: %or = llvm.or %i, %j : i32
// CHECK-NEXT: %xor = llvm.xor %i, %j : i32
// CHECK-NEXT: %shl = llvm.shl %i, %j : i32
// CHECK-NEXT: %shrs = llvm.ashr %i, %j : i32
// CHECK-NEXT: %shru = llvm.lshr %i, %j : i32
// CHECK-NEXT: %maxs = llvm.call_intrinsic "llvm.smax.i32"(%i, %j) : (i32, i32) -> i32
// CHECK-NEXT: %mins = llvm.call_intrinsic "llvm.smin.i32"(%i, %j) : (i32, i32) -> i32
// CHECK-NEXT: %maxu = llvm.call_intrinsic "llvm.umax.i32"(%i, %j) : (i32, i32) -> i32
// CHECK-NEXT: %minu = llvm.call_intrinsic "llvm.umin.i32"(%i, %j) : (i32, i32) -> i32

// -----

%f, %g = "test.op"() : () -> (f32, f32)
%add = arith.addf %f, %g : f32
%sub = arith.subf %f, %g fastmath<fast> : f32
%mul = arith.mulf %f, %g : f32
%div = arith.divf %f, %g : f32
%neg = arith.negf %f : f32
%maxnum = arith.maxnumf %f, %g : f32
%minnum = arith.minnumf %f, %g : f32
%maximum = arith.maximumf %f, %g : f32
%minimum = arith.minimumf %f, %g : f32

// CHECK-LABEL: builtin.module {
// CHECK:      %add = llvm.fadd %f, %g : f32
// CHECK-NEXT: %sub = llvm.fsub %f, %g {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK-NEXT: %mul = llvm.fmul %f, %g : f32
// CHECK-NEXT: %div = llvm.fdiv %f, %g : f32
// CHECK-NEXT: %neg = llvm.fneg %f : f32
// CHECK-NEXT: %maxnum = llvm.intr.maxnum(%f, %g) : (f32, f32) -> f32
// CHECK-NEXT: %minnum = llvm.intr.minnum(%f, %g) : (f32, f32) -> f32
// CHECK-NEXT: %maximum = llvm.call_intrinsic "llvm.maximum.f32"(%f, %g) : (f32, f32) -> f32
// CHECK-NEXT: %minimum = llvm.call_intrinsic "llvm.minimum.f32"(%f, %g) : (f32, f32) -> f32

// -----

%i, %j = "test.op"() : () -> (i32, i32)
%f, %g = "test.op"() : () -> (f32, f32)
%eq = arith.cmpi eq, %i, %j : i32
%ult = arith.cmpi ult, %i, %j : i32
%olt = arith.cmpf olt, %f, %g : f32
%uno = arith.cmpf uno, %f, %g : f32
%false = arith.cmpf false, %f, %g : f32
%true = arith.cmpf true, %f, %g : f32
%sel = arith.select %eq, %f, %g : f32

// CHECK-LABEL: builtin.module {
// CHECK:      %eq = llvm.icmp "eq" %i, %j : i32
// CHECK-NEXT: %ult = llvm.icmp "ult" %i, %j : i32
// CHECK-NEXT: %olt = llvm.fcmp "olt" %f, %g : f32
// CHECK-NEXT: %uno = llvm.fcmp "uno" %f, %g : f32
// CHECK-NEXT: %false = llvm.mlir.constant(false) : i1
// CHECK-NEXT: %true = llvm.mlir.constant(true) : i1
// CHECK-NEXT: %sel = llvm.select %eq, %f, %g : i1, f32

// -----

%i, %j = "test.op"() : () -> (i32, i32)
%f, %g = "test.op"() : () -> (f32, f32)
%ext = arith.extf %f : f32 to f64
%trunc = arith.truncf %ext : f64 to f32
%sext = arith.extsi %i : i32 to i64
%zext = arith.extui %i : i32 to i64
%itrunc = arith.trunci %i : i32 to i8
%sitofp = arith.sitofp %i : i32 to f32
%uitofp = arith.uitofp %i : i32 to f32
%fptosi = arith.fptosi %f : f32 to i32
%fptoui = arith.fptoui %f : f32 to i8
%bitcast = arith.bitcast %f : f32 to i32

// CHECK-LABEL: builtin.module {
// CHECK:      %ext = llvm.fpext %f : f32 to f64
// CHECK-NEXT: %trunc = llvm.fptrunc %ext : f64 to f32
// CHECK-NEXT: %sext = llvm.sext %i : i32 to i64
// CHECK-NEXT: %zext = llvm.zext %i : i32 to i64
// CHECK-NEXT: %itrunc = llvm.trunc %i : i32 to i8
// CHECK-NEXT: %sitofp = llvm.sitofp %i : i32 to f32
// CHECK-NEXT: %uitofp = llvmx.uitofp %i : i32 to f32
// CHECK-NEXT: %fptosi = llvmx.fptosi %f : f32 to i32
// CHECK-NEXT: %fptoui = llvmx.fptoui %f : f32 to i8
// CHECK-NEXT: %bitcast = llvm.bitcast %f : f32 to i32

// -----

// index values are carried as i64; index_cast is an extension, a truncation or nothing.
%x, %y = "test.op"() : () -> (index, index)
%i = "test.op"() : () -> i32
%sum = arith.addi %x, %y : index
%wide = arith.index_cast %i : i32 to index
%narrow = arith.index_cast %sum : index to i32
%same = arith.index_cast %sum : index to i64
"test.op"(%wide, %narrow, %same) : (index, i32, i64) -> ()

// CHECK-LABEL: builtin.module {
// CHECK:      %x_1 = builtin.unrealized_conversion_cast %x : index to i64
// CHECK-NEXT: %y_1 = builtin.unrealized_conversion_cast %y : index to i64
// CHECK-NEXT: %sum = llvm.add %x_1, %y_1 : i64
// CHECK-NEXT: %sum_1 = builtin.unrealized_conversion_cast %sum : i64 to index
// CHECK-NEXT: %wide = llvm.sext %i : i32 to i64
// CHECK-NEXT: %wide_1 = builtin.unrealized_conversion_cast %wide : i64 to index
// CHECK-NEXT: %narrow = llvm.trunc %sum : i64 to i32
// CHECK-NEXT: "test.op"(%wide_1, %narrow, %sum) : (index, i32, i64) -> ()

// -----

// floordivsi: the truncating quotient, minus one when inexact and the signs differ.
%i, %j = "test.op"() : () -> (i32, i32)
%q = arith.floordivsi %i, %j : i32

// CHECK-LABEL: builtin.module {
// CHECK:      %q = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %q_1 = llvm.sdiv %i, %j : i32
// CHECK-NEXT: %q_2 = llvm.mul %q_1, %j : i32
// CHECK-NEXT: %q_3 = llvm.icmp "ne" %i, %q_2 : i32
// CHECK-NEXT: %q_4 = llvm.icmp "slt" %i, %q : i32
// CHECK-NEXT: %q_5 = llvm.icmp "slt" %j, %q : i32
// CHECK-NEXT: %q_6 = llvm.icmp "ne" %q_4, %q_5 : i1
// CHECK-NEXT: %q_7 = llvm.and %q_3, %q_6 : i1
// CHECK-NEXT: %q_8 = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: %q_9 = llvm.add %q_1, %q_8 : i32
// CHECK-NEXT: %q_10 = llvm.select %q_7, %q_9, %q_1 : i1, i32

// -----

// floordivsi and ceildivsi by a positive constant: the dividend moved by b - 1 toward
// the rounding direction when its sign calls for it, then one truncating division.
%i = "test.op"() : () -> i64
%c4 = arith.constant 4 : i64
%q = arith.floordivsi %i, %c4 : i64
%p = arith.ceildivsi %i, %c4 : i64

// CHECK-LABEL: builtin.module {
// CHECK:      %q = llvm.mlir.constant(0) : i64
// CHECK-NEXT: %q_1 = llvm.mlir.constant(-3) : i64
// CHECK-NEXT: %q_2 = llvm.icmp "slt" %i, %q : i64
// CHECK-NEXT: %q_3 = llvm.add %i, %q_1 : i64
// CHECK-NEXT: %q_4 = llvm.select %q_2, %q_3, %i : i1, i64
// CHECK-NEXT: %q_5 = llvm.sdiv %q_4, %c4 : i64
// CHECK:      %p_1 = llvm.mlir.constant(3) : i64
// CHECK-NEXT: %p_2 = llvm.icmp "sgt" %i, %p : i64
// CHECK-NEXT: %p_3 = llvm.add %i, %p_1 : i64
// CHECK-NEXT: %p_4 = llvm.select %p_2, %p_3, %i : i1, i64
// CHECK-NEXT: %p_5 = llvm.sdiv %p_4, %c4 : i64
