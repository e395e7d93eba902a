"""Probe of the llvmpipe loop cap (65,535 iterations per invocation): ops at shapes whose one
invocation would loop past it, on /GPU:0 against TF-CPU (same inputs). Prints ok, WRONG or the
error per case. Not a test: the pool cases it found refused now run in passes of window rows and
are tests (test_ops.py::test_pools_past_the_loop_limit); it stays to probe new kernels.

    .venv/bin/python scripts/probe_loop_cap.py [CASE...]
"""
import sys, numpy as np, tensorflow as tf
def n(*s, dt=np.float32): return tf.constant(rng.standard_normal(s).astype(dt))
K = [1, 256, 256, 1]; S = [1, 1, 1, 1]
cases = {
 "matmul_half_k70000": lambda: tf.matmul(n(2, 70000, dt=np.float16), n(70000, 2, dt=np.float16)),
 "max_pool_argmax_256": lambda: tf.cast(tf.nn.max_pool_with_argmax(n(1, 256, 256, 2), 256, 1, "VALID")[1], tf.float32),
 "max_pool_grad_256": lambda: tf.raw_ops.MaxPoolGrad(orig_input=n(1,256,256,2), orig_output=n(1,1,1,2), grad=n(1,1,1,2), ksize=K, strides=S, padding="VALID"),
 "max_pool_grad_256_s256": lambda: (lambda x: tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=tf.nn.max_pool2d(x, 256, 256, "VALID"), grad=n(1,2,2,2), ksize=K, strides=[1,256,256,1], padding="VALID"))(n(1,512,512,2)),
 "max_pool_grad_300_image_256": lambda: (lambda x: tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=tf.nn.max_pool2d(x, 256, 1, "VALID"), grad=n(1,45,45,1), ksize=K, strides=S, padding="VALID"))(n(1,300,300,1)),
 "max_pool_grad_grad_256": lambda: (lambda x: tf.raw_ops.MaxPoolGradGrad(orig_input=x, orig_output=tf.nn.max_pool2d(x, 256, 1, "VALID"), grad=n(1,256,256,2), ksize=K, strides=S, padding="VALID"))(n(1,256,256,2)),
 "max_pool_grad_argmax_256": lambda: (lambda x: tf.raw_ops.MaxPoolGradWithArgmax(input=x, grad=n(1,1,1,2), argmax=tf.nn.max_pool_with_argmax(x, 256, 1, "VALID")[1], ksize=K, strides=S, padding="VALID"))(n(1,256,256,2)),
 "avg_pool_grad_cover": lambda: tf.raw_ops.AvgPoolGrad(orig_input_shape=[1,600,600,1], grad=n(1,345,345,1), ksize=K, strides=S, padding="VALID"),
 "conv_grad_input_300": lambda: tf.raw_ops.Conv2DBackpropInput(input_sizes=[1,300,300,1], filter=n(300,300,1,1), out_backprop=n(1,1,1,1), strides=S, padding="VALID"),
 "conv_grad_filter_300": lambda: tf.raw_ops.Conv2DBackpropFilter(input=n(1,300,300,1), filter_sizes=[300,300,1,1], out_backprop=n(1,1,1,1), strides=S, padding="VALID"),
 "depthwise_grad_input_300": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(input_sizes=[1,300,300,1], filter=n(300,300,1,1), out_backprop=n(1,1,1,1), strides=S, padding="VALID"),
 "depthwise_grad_filter_300": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(input=n(1,300,300,1), filter_sizes=[300,300,1,1], out_backprop=n(1,1,1,1), strides=S, padding="VALID"),
 "max_pool3d_grad_48": lambda: (lambda x: tf.raw_ops.MaxPool3DGrad(orig_input=x, orig_output=tf.nn.max_pool3d(x, 48, 1, "VALID"), grad=n(1,1,1,1,1), ksize=[1,48,48,48,1], strides=[1]*5, padding="VALID"))(n(1,48,48,48,1)),
 "avg_pool3d_grad_48": lambda: tf.raw_ops.AvgPool3DGrad(orig_input_shape=[1,48,48,48,1], grad=n(1,1,1,1,1), ksize=[1,48,48,48,1], strides=[1]*5, padding="VALID"),
 "max_pool3d_grad_grad_48": lambda: (lambda x: tf.raw_ops.MaxPool3DGradGrad(orig_input=x, orig_output=tf.nn.max_pool3d(x, 48, 1, "VALID"), grad=n(1,48,48,48,1), ksize=[1,48,48,48,1], strides=[1]*5, padding="VALID"))(n(1,48,48,48,1)),
 "conv3d_48": lambda: tf.nn.conv3d(n(1,48,48,48,1), n(48,48,48,1,1), [1]*5, "VALID"),
 "conv3d_grad_input_48": lambda: tf.raw_ops.Conv3DBackpropInputV2(input_sizes=[1,48,48,48,1], filter=n(48,48,48,1,1), out_backprop=n(1,1,1,1,1), strides=[1]*5, padding="VALID"),
 "conv3d_grad_filter_48": lambda: tf.raw_ops.Conv3DBackpropFilterV2(input=n(1,48,48,48,1), filter_sizes=[48,48,48,1,1], out_backprop=n(1,1,1,1,1), strides=[1]*5, padding="VALID"),
 "resize_bilinear_grad_shrink": lambda: tf.raw_ops.ResizeBilinearGrad(grads=n(1,1,1,1), original_image=n(1,4000,4000,1)),
 "resize_area": lambda: tf.image.resize(n(1,4000,4000,1), [1,1], "area"),
 "scale_translate_grad": lambda: tf.raw_ops.ScaleAndTranslateGrad(grads=n(1,1,1,1), original_image=n(1,3000,3000,1), scale=[1/3000,1/3000], translation=[0.,0.], kernel_type="triangle"),
}
for name in (sys.argv[1:] or list(cases)):
    try:
        rng = np.random.default_rng(1)
        with tf.device("/GPU:0"): got = cases[name]().numpy()
        rng = np.random.default_rng(1)
        with tf.device("/CPU:0"): want = cases[name]().numpy()
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = np.max(np.abs(g - w)) / max(1, np.max(np.abs(w)))
        print(name, "ok" if err < 1e-3 else "WRONG", f"{err:.2e}", flush=True)
    except Exception as e:
        print(name, "ERROR", type(e).__name__, str(e).splitlines()[0][:220], flush=True)
