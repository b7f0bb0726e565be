// RUN: onnxc-opt %s --compile-target x86-64-v2 -p plan-memory,return-check-status,profile-kernel-calls | filecheck %s
// RUN: onnxc-opt %s --compile-target aarch64 -p plan-memory,return-check-status,profile-kernel-calls | filecheck %s --check-prefix=ARM

// compile(profile=True): every kernel call of the entry is timed with the cycle counter
// (x86-64: llvm.readcyclecounter; AArch64: llvm.readsteadycounter, the user-readable
// CNTVCT_EL0), its ticks and one call added to its row of an i64 [calls + 1, 2] block that
// grows the arena past plan-memory's buffers (offset 128 here, arena 128 -> 192 bytes); the
// last row times the whole entry, up to each return. Each site is described for the runtime
// (kernel, op, node from the call's location, input and output types).

func.func private @relu(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {onnxc.kernel = "graph.relu"} {
  func.return
}
func.func @main(%in: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {onnxc.entry, onnxc.input_names = ["x"], onnxc.output_names = ["y"]} {
  %a = memref.alloc() : memref<4x8xf32>
  func.call @relu(%in, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> () loc("relu0")
  func.call @relu(%a, %out) : (memref<4x8xf32>, memref<4x8xf32>) -> () loc("relu1")
  func.return
}

// CHECK-LABEL: func.func @main
// CHECK-SAME:    %arena: memref<192xi8>) -> i32
// CHECK-SAME:    onnxc.arena_bytes = 192 : i64
// CHECK-SAME:    onnxc.profile_offset = 128 : i64
// CHECK-SAME:    onnxc.profile_sites = [{kernel = "relu", op = "graph.relu", node = "relu0", inputs = "4x8xf32", outputs = "4x8xf32"}, {kernel = "relu", op = "graph.relu", node = "relu1", inputs = "4x8xf32", outputs = "4x8xf32"}]
// CHECK:         %[[OFFSET:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[COUNTERS:.*]] = memref.view %arena[%[[OFFSET]]][] : memref<192xi8> to memref<3x2xi64>
// CHECK-NEXT:    %[[START:.*]] = func.call @llvm.readcyclecounter() : () -> i64
// CHECK-NEXT:    %[[TICKS:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[CALLS:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         %[[T0:.*]] = func.call @llvm.readcyclecounter() : () -> i64
// CHECK-NEXT:    func.call @relu(%in, %a)
// CHECK-NEXT:    %[[T1:.*]] = func.call @llvm.readcyclecounter() : () -> i64
// CHECK-NEXT:    %[[D:.*]] = arith.subi %[[T1]], %[[T0]] : i64
// CHECK-NEXT:    %[[SITE:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[OLD:.*]] = memref.load %[[COUNTERS]][%[[SITE]], %[[TICKS]]] : memref<3x2xi64>
// CHECK-NEXT:    %[[NEW:.*]] = arith.addi %[[OLD]], %[[D]] : i64
// CHECK-NEXT:    memref.store %[[NEW]], %[[COUNTERS]][%[[SITE]], %[[TICKS]]] : memref<3x2xi64>
// CHECK-NEXT:    %[[N:.*]] = memref.load %[[COUNTERS]][%[[SITE]], %[[CALLS]]] : memref<3x2xi64>
// CHECK-NEXT:    %[[N1:.*]] = arith.addi %[[N]], %[[ONE]] : i64
// CHECK-NEXT:    memref.store %[[N1]], %[[COUNTERS]][%[[SITE]], %[[CALLS]]] : memref<3x2xi64>
// CHECK:         func.call @relu(%a, %out)
// CHECK:         arith.constant 1 : index
// CHECK:         %[[END:.*]] = func.call @llvm.readcyclecounter() : () -> i64
// CHECK-NEXT:    arith.subi %[[END]], %[[START]] : i64
// CHECK-NEXT:    %[[ENTRY:.*]] = arith.constant 2 : index
// CHECK-NEXT:    memref.load %[[COUNTERS]][%[[ENTRY]], %[[TICKS]]]
// CHECK:         func.return
// CHECK:       func.func private @llvm.readcyclecounter() -> i64

// ARM-LABEL: func.func @main
// ARM:         func.call @llvm.readsteadycounter() : () -> i64
// ARM-NOT:     readcyclecounter
// ARM:       func.func private @llvm.readsteadycounter() -> i64
