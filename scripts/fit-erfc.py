#!/usr/bin/env python3
"""Fits the MATH_ERFC_SCALED_* tables of wgsl/math.wgsl: erfc(x) exp(x^2) on four intervals, each a
degree-12 polynomial in x - c, weighted for relative error. Prints each interval's float64 error and
its error evaluated by float32 Horner (in units of 2^-24), then the WGSL constants.

    .venv/bin/python scripts/fit-erfc.py
"""

import math

import numpy as np

INTERVALS = [(0.5, 1.0, 0.75), (1.0, 2.0, 1.5), (2.0, 4.0, 3.0), (4.0, 10.1, 7.0)]
DEGREE = 12


def scaled_erfc(x):
    return math.erfc(x) * math.exp(x * x)


def fit(lo, hi, centre):
    xs = np.linspace(lo, hi, 20001).astype(np.float32).astype(np.float64)
    target = np.array([scaled_erfc(x) for x in xs])
    t = xs - centre
    series = np.polynomial.chebyshev.Chebyshev.fit(t, target, DEGREE, w=1 / target)
    coef = series.convert(kind=np.polynomial.Polynomial, domain=[-1, 1], window=[-1, 1]).coef.astype(np.float32)
    t32 = t.astype(np.float32)
    acc = coef[-1]
    for c in coef[-2::-1]:
        acc = np.float32(np.float32(acc * t32) + c)
    return np.max(np.abs(series(t) / target - 1)), np.max(np.abs(acc / target - 1)) / 2**-24, coef


def main():
    for i, (lo, hi, centre) in enumerate(INTERVALS):
        err64, err32, coef = fit(lo, hi, centre)
        print(f"// [{lo}, {hi}): float64 fit {err64:.2e}, float32 Horner {err32:.2f} x 2^-24")
        values = ", ".join(repr(float(c)) for c in coef)
        print(f"const MATH_ERFC_SCALED_{i}: array<f32, {DEGREE + 1}> = array<f32, {DEGREE + 1}>({values});")


if __name__ == "__main__":
    main()
