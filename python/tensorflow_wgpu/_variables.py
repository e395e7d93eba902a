"""Eager updates of resource variables on WGPU where TensorFlow gives plugins no access to them.

TF 2.19 and later do not export ``kernels_experimental.h`` (``TF_AssignVariable``...), so a kernel
cannot update or read a variable's tensor. In graphs, the plugin's Grappler pass rewrites those ops
(``src/rewrite``) into reads, arithmetic and ``AssignVariableOp``, which run. In eager mode no graph
pass runs: here each such op called eagerly on a variable of the WGPU device runs as a one-op
``tf.function`` instead, which the same pass rewrites. Covered: ``v.assign_add``/``assign_sub``
(AssignAdd/AssignSubVariableOp), ``ResourceGather`` and ``ResourceGatherNd`` (``tf.gather`` and
``tf.gather_nd`` on a variable, Embedding lookups), ``ResourceScatter{Add,Sub,Mul,Div,Min,Max,
Update}`` (``v.scatter_*``; Keras optimizers update Embeddings with Add/Sub),
``ResourceScatterNd{Add,Sub,Update,Min,Max}`` (``v.scatter_nd_*``) and the TF1 optimizers'
``ResourceApply*`` and ``ResourceSparseApply*`` ops (``src/optimizer.rs`` lists them), through the
Python functions TF and Keras call (``gen_*_ops``) and their ``tf.raw_ops`` twins. As with TF's own kernels under ``use_locking=False``, concurrent updates of
one variable are not atomic.
"""

import functools
import logging
import os

from tensorflow_wgpu import _hooks

# The input each op checks against the variable's shape: TF's kernels refuse a mismatch, and the
# rewritten graph would broadcast instead.
UPDATE_INPUT = {
    "assign_add_variable_op": "value",
    "assign_sub_variable_op": "value",
    "resource_apply_gradient_descent": "delta",
    "resource_apply_proximal_gradient_descent": "delta",
    **{f"resource_apply_{name}": "grad" for name in (
        "momentum", "keras_momentum", "adam", "rms_prop", "centered_rms_prop", "adagrad", "adagrad_v2",
        "adadelta", "proximal_adagrad", "adagrad_da", "ftrl", "ftrl_v2", "ada_max", "add_sign", "power_sign",
        "adam_with_amsgrad")},
}

# The optimizers the graph rewrite serves (src/optimizer.rs): (Python name, op name).
OPTIMIZERS = (
    ("gradient_descent", "GradientDescent"), ("momentum", "Momentum"), ("keras_momentum", "KerasMomentum"),
    ("adam", "Adam"), ("rms_prop", "RMSProp"), ("centered_rms_prop", "CenteredRMSProp"), ("adagrad", "Adagrad"),
    ("adagrad_v2", "AdagradV2"), ("adadelta", "Adadelta"), ("proximal_gradient_descent", "ProximalGradientDescent"),
    ("proximal_adagrad", "ProximalAdagrad"), ("adagrad_da", "AdagradDA"), ("ftrl", "Ftrl"), ("ftrl_v2", "FtrlV2"),
    ("ada_max", "AdaMax"), ("add_sign", "AddSign"), ("power_sign", "PowerSign"), ("adam_with_amsgrad", "AdamWithAmsgrad"),
)
SPARSE_OPTIMIZERS = tuple(o for o in OPTIMIZERS if o[1] not in (
    "GradientDescent", "Adam", "AdaMax", "AddSign", "PowerSign", "AdamWithAmsgrad"))

# Module -> (Python op function, its tf.raw_ops twin); the first input is the variable's handle.
ROUTED = {
    "tensorflow.python.ops.gen_resource_variable_ops": (
        ("assign_add_variable_op", "AssignAddVariableOp"),
        ("assign_sub_variable_op", "AssignSubVariableOp"),
        ("resource_gather", "ResourceGather"),
        ("resource_gather_nd", "ResourceGatherNd"),
        *((f"resource_scatter_{name.lower()}", f"ResourceScatter{name}")
          for name in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update")),
    ),
    "tensorflow.python.ops.gen_state_ops": tuple(
        (f"resource_scatter_nd_{name.lower()}", f"ResourceScatterNd{name}")
        for name in ("Add", "Sub", "Update", "Min", "Max")),
    "tensorflow.python.ops.gen_training_ops": (
        *((f"resource_apply_{name}", f"ResourceApply{op}") for name, op in OPTIMIZERS),
        *((f"resource_sparse_apply_{name}", f"ResourceSparseApply{op}") for name, op in SPARSE_OPTIMIZERS),
    ),
}

_variable_access = None


def variable_access():
    """Whether this TensorFlow exports the variable functions to plugins (2.16 does, 2.19+ not)."""
    global _variable_access
    if _variable_access is None:
        import ctypes

        import tensorflow as tf

        framework = ctypes.CDLL(os.path.join(os.path.dirname(tf.__file__), "libtensorflow_framework.so.2"))
        _variable_access = all(hasattr(framework, f) for f in (
            "TF_MaybeLockVariableInputMutexesInOrder", "TF_GetInputTensorFromVariable",
            "TF_ReleaseVariableInputLockHolder"))
    return _variable_access


def _on_wgpu(handle):
    from tensorflow_wgpu._xla import plugin_loaded

    device = getattr(handle, "device", "") or ""
    return "GPU" in device and plugin_loaded() and not variable_access()


# Functions kept per op; each traces once per variable (TF keys traces on the resource handle), and
# one function per variable keeps TF from warning about retracing.
_MAX_FUNCTIONS = 4096


def _variable_shape(handle):
    """The shape an eager variable handle carries, or None."""
    data = getattr(handle, "_handle_data", None)
    if data is None or not getattr(data, "is_set", False) or not data.shape_and_type:
        return None
    shape = data.shape_and_type[0].shape
    return None if shape.unknown_rank else [d.size for d in shape.dim]


# Hyperparameters the ResourceApply* kernels require to be scalars (a vector would broadcast in the
# rewritten formulas).
SCALAR_INPUTS = ("alpha", "lr", "momentum", "beta1_power", "beta2_power", "beta1", "beta2", "epsilon", "rho", "l1",
                 "l2", "l2_shrinkage", "lr_power", "global_step")


def _check_update_shape(op, handle, args, kwargs):
    """TF's kernels' shape checks, which the rewritten graph (element-wise, broadcasting) lacks."""
    import inspect

    import tensorflow as tf

    try:
        bound = inspect.signature(op).bind_partial(*args, **kwargs).arguments
    except TypeError:
        return  # the op itself reports a wrong call
    for name in SCALAR_INPUTS:
        shape = getattr(bound.get(name), "shape", None)
        if shape is not None and tf.TensorShape(shape).rank not in (None, 0):
            raise tf.errors.InvalidArgumentError(None, None, f"{name} is not a scalar: {list(shape)}")
    if op.__name__ not in UPDATE_INPUT:
        return
    arg = UPDATE_INPUT[op.__name__]
    update = bound.get(arg)
    want = _variable_shape(handle)
    if want is None or getattr(update, "shape", None) is None:
        return
    got = tf.TensorShape(update.shape)
    if got.rank is None or list(got) == want:
        return
    if arg == "value":
        message = f"Cannot update variable with shape {want} using a Tensor with shape {list(got)}, shapes must be equal."
    else:
        message = f"var and {arg} do not have the same shape{want} {list(got)}"
    raise tf.errors.InvalidArgumentError(None, None, message)


def _as_graph(op):
    """`op` wrapped so that an eager call on a WGPU variable runs in a tf.function."""
    functions = {}

    def key_of(handle):
        # A tensor's `_id` is never reused; `id()` is, once the handle is freed, and a function
        # traced for another variable (its shape in the gradient's graph) would then run.
        return getattr(handle, "_id", None) or id(handle)

    def function_for(handle):
        key = key_of(handle)
        if key not in functions:
            import tensorflow as tf

            def body(*args, **kwargs):
                # Grappler skips graphs of fewer than 4 nodes (`min_graph_nodes`), and the
                # plugin's pass with it: route each tensor input through an Identity.
                args = [tf.identity(a) if _is_data(a) else a for a in args]
                kwargs = {k: tf.identity(v) if _is_data(v) else v for k, v in kwargs.items()}
                out = op(*args, **kwargs)
                # Ops without outputs give their Operation in graphs, None eagerly.
                return None if isinstance(out, tf.Operation) else out

            if len(functions) >= _MAX_FUNCTIONS:
                functions.clear()
            functions[key] = tf.function(body, reduce_retracing=True, autograph=False)
        return functions[key]

    @functools.wraps(op)
    def routed(*args, **kwargs):
        from tensorflow.python.eager import context

        handle = args[0] if args else kwargs.get("resource", kwargs.get("var", kwargs.get("ref")))
        if not (context.executing_eagerly() and _on_wgpu(handle)):
            return op(*args, **kwargs)
        _check_update_shape(op, handle, args, kwargs)
        if key_of(handle) in functions:
            return function_for(handle)(*args, **kwargs)
        # The first call traces. TF counts traces per Python code object, so one trace per
        # variable would read as "excessive retracing" in TF's log: keep that warning out.
        logger = logging.getLogger("tensorflow")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            return function_for(handle)(*args, **kwargs)
        finally:
            logger.setLevel(level)

    routed._tf_wgpu_routed = True
    return routed


def _is_data(value):
    import tensorflow as tf

    return isinstance(value, tf.Tensor) and value.dtype != tf.resource


def _patch(names):
    def patch(module):
        for name, raw_name in names:
            op = getattr(module, name, None)
            if op is None or getattr(op, "_tf_wgpu_routed", False):
                continue
            routed = _as_graph(op)
            setattr(module, name, routed)
            raw = getattr(module, raw_name, None)
            if raw is not None:
                # tf.raw_ops binds a copy of the original function: route it too (keywords only).
                @functools.wraps(raw)
                def raw_routed(routed=routed, **kwargs):
                    return routed(**kwargs)

                raw_routed._tf_wgpu_routed = True
                setattr(module, raw_name, raw_routed)

    return patch


def install():
    for module, names in ROUTED.items():
        _hooks.when_imported(module, _patch(names))
