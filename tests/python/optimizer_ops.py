"""The optimizer ops the plugin serves (src/optimizer.rs), shared by test_ops.py and
fuzz_kernels.py: each op's resource inputs, then its other inputs in op order, and its flag
attribute. Plain data, so that the fuzzer's parent process need not import TensorFlow;
test_ops.py checks it against TF's op registry."""

DENSE = {
    "ResourceApplyGradientDescent": (("var",), ("alpha", "delta")),
    "ResourceApplyMomentum": (("var", "accum"), ("lr", "grad", "momentum")),
    "ResourceApplyKerasMomentum": (("var", "accum"), ("lr", "grad", "momentum")),
    "ResourceApplyAdam": (("var", "m", "v"), ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad")),
    "ResourceApplyRMSProp": (("var", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad")),
    "ResourceApplyAdagrad": (("var", "accum"), ("lr", "grad")),
    "ResourceApplyCenteredRMSProp": (("var", "mg", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad")),
    "ResourceApplyAdagradV2": (("var", "accum"), ("lr", "epsilon", "grad")),
    "ResourceApplyAdadelta": (("var", "accum", "accum_update"), ("lr", "rho", "epsilon", "grad")),
    "ResourceApplyProximalGradientDescent": (("var",), ("alpha", "l1", "l2", "delta")),
    "ResourceApplyProximalAdagrad": (("var", "accum"), ("lr", "l1", "l2", "grad")),
    "ResourceApplyFtrl": (("var", "accum", "linear"), ("grad", "lr", "l1", "l2", "lr_power")),
    "ResourceApplyFtrlV2": (("var", "accum", "linear"), ("grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power")),
    "ResourceApplyAdagradDA": (("var", "gradient_accumulator", "gradient_squared_accumulator"),
                               ("grad", "lr", "l1", "l2", "global_step")),
    "ResourceApplyAdaMax": (("var", "m", "v"), ("beta1_power", "lr", "beta1", "beta2", "epsilon", "grad")),
    "ResourceApplyAddSign": (("var", "m"), ("lr", "alpha", "sign_decay", "beta", "grad")),
    "ResourceApplyPowerSign": (("var", "m"), ("lr", "logbase", "sign_decay", "beta", "grad")),
    "ResourceApplyAdamWithAmsgrad": (("var", "m", "v", "vhat"), ("beta1_power", "beta2_power", "lr", "beta1", "beta2",
                                                              "epsilon", "grad")),
}
# Optimizers TF has no sparse op of (their optimizers scatter-add, or TF never wrote one).
DENSE_ONLY = ("ResourceApplyGradientDescent", "ResourceApplyAdam", "ResourceApplyAdaMax", "ResourceApplyAddSign",
              "ResourceApplyPowerSign", "ResourceApplyAdamWithAmsgrad")
# The ResourceSparseApply* twins (TF has none for GradientDescent and Adam, whose optimizers
# scatter-add): a vector of row indices follows the gradient (ProximalGradientDescent's delta is a
# grad there).
SIGNATURES = {
    **DENSE,
    **{op.replace("Apply", "SparseApply"): (variables, tuple(
        x for a in others for x in (("grad", "indices") if a in ("grad", "delta") else (a,))))
       for op, (variables, others) in DENSE.items()
       if op not in DENSE_ONLY},
}
# The flag attribute each optimizer has (by its name after ResourceApply/ResourceSparseApply).
FLAGS = {"Momentum": "use_nesterov", "KerasMomentum": "use_nesterov", "Adam": "use_nesterov",
         "Adagrad": "update_slots", "AdagradV2": "update_slots", "Ftrl": "multiply_linear_by_lr",
         "FtrlV2": "multiply_linear_by_lr"}
