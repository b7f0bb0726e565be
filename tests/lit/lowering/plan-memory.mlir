// RUN: onnxc-opt %s -p plan-memory | filecheck %s

// Four chained buffers of 128 bytes need only two arena slots: a buffer is reused as soon
// as its last reader (or the last reader of a view of it) has run.

func.func private @relu(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {onnxc.kernel = "graph.relu"} {
  func.return
}
func.func @main(%in: memref<4x8xf32>, %out: memref<32xf32>) attributes {onnxc.entry} {
  %a = memref.alloc() : memref<4x8xf32>
  func.call @relu(%in, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %b = memref.alloc() : memref<4x8xf32>
  func.call @relu(%a, %b) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %c = memref.alloc() : memref<4x8xf32>
  func.call @relu(%b, %c) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %v = memref.reinterpret_cast %c to offset: [0], sizes: [32], strides: [1] : memref<4x8xf32> to memref<32xf32>
  %d = memref.alloc() : memref<4x8xf32>
  func.call @relu(%c, %d) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @main
// CHECK-SAME:    %arena: memref<256xi8>
// CHECK-SAME:    onnxc.arena_bytes = 256 : i64, onnxc.intermediate_bytes = 512 : i64
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %a = memref.view %arena[%[[O0]]][] : memref<256xi8> to memref<4x8xf32>
// CHECK-NEXT:    func.call @relu(%in, %a)
// CHECK-NEXT:    %[[O1:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %b = memref.view %arena[%[[O1]]][] : memref<256xi8> to memref<4x8xf32>
// CHECK-NEXT:    func.call @relu(%a, %b)
// CHECK-NEXT:    %[[O2:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %c = memref.view %arena[%[[O2]]][]
// CHECK-NEXT:    func.call @relu(%b, %c)
// CHECK-NEXT:    %v = memref.reinterpret_cast %c
// CHECK-NEXT:    %[[O3:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %d = memref.view %arena[%[[O3]]][]
// CHECK-NOT:     memref.alloc
