#!/usr/bin/env python3
"""2-D incompressible Navier-Stokes in vorticity form on [0, 2 pi)^2, pseudo-spectral, with
np.fft on one core: the serial reference of apps/spectral (apps/spectral/check_spectral.py) and
its peer. The same scheme as apps/spectral/spectral.cpp (docs/spectral.md):

    w_t + u . grad w = nu lap w,   -lap psi = w,   u = d psi/dy,   v = -d psi/dx
    state w_hat = rfft2(w) (axis 0: y, ky = fftfreq(n) n; axis 1: x, kx = 0..n/2)
    N(w_hat) = -D rfft2(u w_x + v w_y), D the 2/3 rule (3 |kx| < n and 3 |ky| < n)
    RK4; viscous term by the integrating factor E = exp(-nu k^2 dt) (IFRK4) or explicitly

Initial conditions: taylor-green (w = 2 K cos(K x) cos(K y)) and random (Philox4x32-10 uniform
numbers as spmd::random draws them, element i of the n x n grid from counter i, band-limited to
KMIN <= |k| <= KMAX and scaled to an rms vorticity of --amplitude).

usage: spectral_numpy.py [--n N] [--steps S] [--dt DT] [--cfl C] [--nu NU] [--init taylor-green|random]
                         [--viscous integrating-factor|explicit] [--tg-k K] [--seed S] [--kmin KMIN] [--kmax KMAX]
                         [--amplitude A] [--save FILE.npy] [--json FILE]
Run with /usr/bin/python3 (Debian's numpy).
"""
import argparse
import json
import time

import numpy as np

# ---- Philox4x32-10 (Random123), as spmd::random (include/spmd/impl/random_impl.hpp) -------------
M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counter, seed, stream=0):
    """The four 32-bit words of Philox4x32-10 for the counters `counter` (uint64 array): counter
    words (i low, i high, stream low, stream high), key (seed low, seed high)."""
    c0 = counter & MASK32
    c1 = counter >> np.uint64(32)
    c2 = np.full_like(c0, stream & 0xFFFFFFFF)
    c3 = np.full_like(c0, (stream >> 32) & 0xFFFFFFFF)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0 = M0 * c0
        p1 = M1 * c2
        hi0, lo0 = p0 >> np.uint64(32), p0 & MASK32
        hi1, lo1 = p1 >> np.uint64(32), p1 & MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return c0, c1, c2, c3


def uniform(shape, seed, stream=0):
    """spmd::random::uniform (double, [0, 1)): element i is ((w1:w0) >> 11) 2^-53."""
    count = int(np.prod(shape))
    w0, w1, _, _ = philox4x32_10(np.arange(count, dtype=np.uint64), seed, stream)
    bits = ((w1 << np.uint64(32)) | w0) >> np.uint64(11)
    return (bits.astype(np.float64) * 2.0 ** -53).reshape(shape)


# ---- the solver -----------------------------------------------------------------------------------
class Spectral:
    def __init__(self, n, nu):
        self.n = n
        ky = np.fft.fftfreq(n, 1.0 / n)[:, None]  # integers, axis 0
        kx = np.arange(n // 2 + 1, dtype=np.float64)[None, :]
        self.kx = np.broadcast_to(kx, (n, n // 2 + 1)).copy()
        self.ky = np.broadcast_to(ky, (n, n // 2 + 1)).copy()
        k2 = self.kx * self.kx + self.ky * self.ky
        self.k2 = k2
        self.k2inv = np.where(k2 > 0, 1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
        akx, aky = np.abs(self.kx).astype(np.int64), np.abs(self.ky).astype(np.int64)
        self.dealias = ((3 * akx < n) & (3 * aky < n)).astype(np.float64)
        i = np.arange(n // 2 + 1)
        self.weight = np.broadcast_to(np.where((i == 0) | (2 * i == n), 1.0, 2.0), self.kx.shape)
        self.lin = nu * k2

    def irfft(self, a):
        return np.fft.irfft2(a, s=(self.n, self.n))

    def velocity(self, w):
        return (self.irfft(1j * self.ky * self.k2inv * w), self.irfft(-1j * self.kx * self.k2inv * w))

    def nonlinear(self, w):
        u, v = self.velocity(w)
        wx = self.irfft(1j * self.kx * w)
        wy = self.irfft(1j * self.ky * w)
        return -self.dealias * np.fft.rfft2(u * wx + v * wy)

    def step_if(self, w, dt, E, E2):
        h = dt / 2
        f = self.nonlinear(w)
        acc = E * f
        ws = E2 * (w + h * f)
        f = self.nonlinear(ws)
        acc = acc + 2.0 * E2 * f
        ws = E2 * w + h * f
        f = self.nonlinear(ws)
        acc = acc + 2.0 * E2 * f
        ws = E * w + dt * E2 * f
        f = self.nonlinear(ws)
        return E * w + (dt / 6) * (acc + f)

    def step_explicit(self, w, dt):
        h = dt / 2
        a = self.nonlinear(w) - self.lin * w
        ws = w + h * a
        b = self.nonlinear(ws) - self.lin * ws
        ws = w + h * b
        c = self.nonlinear(ws) - self.lin * ws
        ws = w + dt * c
        d = self.nonlinear(ws) - self.lin * ws
        return w + (dt / 6) * (a + 2.0 * b + 2.0 * c + d)

    def mean_square(self, w, filt=1.0):
        n2 = float(self.n) * float(self.n)
        return float(np.sum(self.weight * filt * (w.real * w.real + w.imag * w.imag))) / (n2 * n2)

    def enstrophy(self, w):
        return 0.5 * self.mean_square(w)

    def energy(self, w):
        return 0.5 * self.mean_square(w, self.k2inv)


def taylor_green(n, k):
    h = 2 * np.pi / n
    j, i = np.indices((n, n))
    return (2.0 * k) * np.cos(k * (h * i)) * np.cos(k * (h * j))


def initial(sp, args):
    n = sp.n
    if args.init == "taylor-green":
        return np.fft.rfft2(taylor_green(n, args.tg_k))
    w = np.fft.rfft2(uniform((n, n), args.seed))
    k2 = sp.k2
    lo, hi = args.kmin, args.kmax
    w = np.where((k2 >= lo * lo) & (k2 <= hi * hi), 1.0, 0.0) * w
    rms = np.sqrt(sp.mean_square(w))
    return (args.amplitude / rms) * w


def run(args):
    """The final w_hat, w and the check values of the app's run with these options."""
    n = args.n
    if n % 2 or n < 8:
        raise SystemExit("--n must be even and >= 8")
    sp = Spectral(n, args.nu)
    w = initial(sp, args)
    z0 = sp.enstrophy(w)
    dt = args.dt
    if dt == 0:
        u, v = sp.velocity(w)
        dt = args.cfl * (2 * np.pi / n) / float(np.max(np.abs(u) + np.abs(v)))
    E, E2 = np.exp(-dt * sp.lin), np.exp(-(dt / 2) * sp.lin)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        w = sp.step_explicit(w, dt) if args.viscous == "explicit" else sp.step_if(w, dt, E, E2)
    seconds = time.perf_counter() - t0
    t = args.steps * dt
    omega = sp.irfft(w)
    out = {"n": n, "steps": args.steps, "dt": dt, "time": t, "energy": sp.energy(w), "enstrophy": sp.enstrophy(w),
           "enstrophy_initial": z0, "max_abs_w": float(np.max(np.abs(omega))), "seconds": seconds,
           "seconds_per_step": seconds / args.steps if args.steps else 0.0}
    if args.init == "taylor-green":
        k = args.tg_k
        exact = np.exp(-2.0 * args.nu * k * k * t) * taylor_green(n, k)
        out["max_error"] = float(np.max(np.abs(omega - exact)))
    return w, omega, out


def parser():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--n", type=int, default=128)
    a.add_argument("--steps", type=int, default=100)
    a.add_argument("--dt", type=float, default=0.0)
    a.add_argument("--cfl", type=float, default=0.5)
    a.add_argument("--nu", type=float, default=1e-3)
    a.add_argument("--init", choices=["taylor-green", "random"], default="taylor-green")
    a.add_argument("--viscous", choices=["integrating-factor", "explicit"], default="integrating-factor")
    a.add_argument("--tg-k", type=int, default=1)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--kmin", type=int, default=1)
    a.add_argument("--kmax", type=int, default=6)
    a.add_argument("--amplitude", type=float, default=1.0)
    a.add_argument("--save", help="write the final vorticity w (n x n) to this .npy file")
    a.add_argument("--json", help="write the check values and the time to this file")
    return a


def main():
    args = parser().parse_args()
    _, omega, out = run(args)
    print(f"spectral_numpy: {args.n} x {args.n}, {args.steps} steps, dt {out['dt']:.6g}: "
          f"{out['seconds']:.4g} s ({out['seconds_per_step']:.4g} s/step), energy {out['energy']!r}, "
          f"enstrophy {out['enstrophy']!r}" + (f", max error {out['max_error']:.3e}" if "max_error" in out else ""))
    if args.save:
        np.save(args.save, omega)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
