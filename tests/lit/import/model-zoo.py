# The model-zoo SqueezeNet shipped with onnx (opset 9), imported from its binary file.
# RUN: %python %s | filecheck %s

from pathlib import Path

import onnx

from onnxc.frontend import import_onnx

light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
module = import_onnx(light / "light_squeezenet.onnx")
module.verify()
print(module)

# CHECK:      func.func @main(%data: tensor<1x3x224x224xf32>) -> tensor<1x1000x1x1xf32>
# CHECK-SAME:   attributes {onnxc.input_names = ["data_0"], onnxc.output_names = ["softmaxout_1"]}
# COM: weights are built by ConstantOfShape from shape initializers; the shapes vanish.
# CHECK:        %conv1_w = graph.constant_of_shape {value = dense<{{.*}}> : tensor<1xf32>} : tensor<64x3x3x3xf32>
# CHECK-NOT:    graph.constant {{.*}}tensor<4xi64>
# CHECK:        %r0 = graph.conv(%data, %conv1_w, %conv1_b) {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}
# CHECK-SAME:     -> tensor<1x64x111x111xf32>
# CHECK:        graph.global_average_pool({{.*}}) : (tensor<1x1000x13x13xf32>) -> tensor<1x1000x1x1xf32>
# COM: opset-9 Softmax on a 4-D tensor at axis 1: flatten, softmax, reshape back
# CHECK-NEXT:   %[[F:.*]] = graph.flatten(%{{.*}}) {axis = 1 : i64} : (tensor<1x1000x1x1xf32>) -> tensor<1x1000xf32>
# CHECK-NEXT:   %[[S:.*]] = graph.softmax(%[[F]]) {axis = 1 : i64}
# CHECK-NEXT:   %softmaxout = graph.reshape(%[[S]]) : (tensor<1x1000xf32>) -> tensor<1x1000x1x1xf32>
# CHECK-NEXT:   func.return %softmaxout : tensor<1x1000x1x1xf32>
