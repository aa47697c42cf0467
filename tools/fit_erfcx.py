"""Derives the polynomial of erfcx_nonnegative (engine/cpu/vector_math.h): the scaled
complementary error function erfcx(z) = e^(z^2) erfc(z), z >= 0, written as t Q(t) with
t = 1 / (1 + z/2). Q is fitted as a degree-9 polynomial in s = t - 0.585, by least
squares on the relative error at 3000 Chebyshev nodes of t in [0.17, 1] (z up to 9.8,
past which e^(-z^2) erfcx(z) is below the smallest normal float), and printed as
float literals, highest degree first, with the largest relative error of the fit in
double on a fine grid. Needs numpy (Debian's python3-numpy).

    /usr/bin/python3 tools/fit_erfcx.py
"""

import math

import numpy as np

T_LOW, CENTRE, DEGREE, NODES = 0.17, 0.585, 9, 3000


def q_of_t(t):
    z = 2.0 * (1.0 / t - 1.0)
    return math.erfc(z) * math.exp(z * z) / t


def main():
    nodes = np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    t = T_LOW + (nodes + 1.0) / 2.0 * (1.0 - T_LOW)
    q = np.array([q_of_t(v) for v in t])
    # Rows scaled by 1 / Q: the residual is the relative error.
    design = np.vander(t - CENTRE, DEGREE + 1, increasing=True) / q[:, None]
    coefficients, *_ = np.linalg.lstsq(design, np.ones(NODES), rcond=None)
    grid = np.linspace(T_LOW, 1.0, 20001)
    fit = np.polyval(coefficients[::-1], grid - CENTRE)
    error = max(abs(f / q_of_t(v) - 1.0) for f, v in zip(fit, grid))
    print("coefficients of s^9 .. s^0:")
    for c in coefficients[::-1]:
        print(f"  {np.format_float_positional(np.float32(c))}f")
    print(f"largest relative error of the fit in double: {error:.2e}")


if __name__ == "__main__":
    main()
