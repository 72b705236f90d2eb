"""MINDE, mutual information from score-based diffusion (Franzese, Bounoua & Michiardi, "MINDE: mutual
information neural diffusion estimation", ICLR 2024).

A variance-preserving diffusion (Song et al. 2021) noises data z_0 to z_t = a_t z_0 + s_t eps with
beta(t) = beta_min + t (beta_max - beta_min), a_t = exp(-1/2 int_0^t beta), s_t^2 = 1 - a_t^2.  For two
data laws p and q diffused the same way, Girsanov's theorem gives (the paper's §3, its eq. for the
KL between path measures)

    KL(p || q) = int_0^T beta(t)/2 E_{p_t} || grad log p_t - grad log q_t ||^2 dt + KL(p_T || q_T),

and the last term vanishes as T grows (both tend to N(0, I)).  With a denoiser eps_hat, the score is
-eps_hat / s_t, so each integrand is beta(t) / (2 s_t^2) E||eps_hat_p - eps_hat_q||^2.  The two variants,
the training times and the readout's quadrature: :class:`MINDE`.  Why these choices (the comparison with
the authors' code): docs/estimators.md, "The newer estimators: against the truth and against their
references".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from mibench.estimators.generative.nets import TimeMLP
from mibench.estimators.trained import HeldOutEstimator, TrainedSettings

BETA_MIN, BETA_MAX = 0.1, 20.0
T_MIN = 1e-3
EMA = 0.995


def _int_beta(t: torch.Tensor) -> torch.Tensor:
    return BETA_MIN * t + 0.5 * (BETA_MAX - BETA_MIN) * t * t


def noise_scale(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a_t, s_t) of the variance-preserving diffusion."""
    a = torch.exp(-0.5 * _int_beta(t))
    return a, torch.sqrt(-torch.expm1(-_int_beta(t)))


def beta(t: torch.Tensor) -> torch.Tensor:
    return BETA_MIN + t * (BETA_MAX - BETA_MIN)


def _t_of_int_beta(b: torch.Tensor) -> torch.Tensor:
    """The t with int_0^t beta = b (the positive root of the quadratic)."""
    c = BETA_MAX - BETA_MIN
    return (-BETA_MIN + torch.sqrt(BETA_MIN ** 2 + 2 * c * b)) / c


def _phi(t: float) -> float:
    """log(exp(int_0^t beta) - 1): an antiderivative of beta(t) / s_t^2 (the readout's weight, times 2)."""
    return math.log(math.expm1(float(_int_beta(torch.tensor(t, dtype=torch.float64)))))


def _t_of_phi(phi: torch.Tensor) -> torch.Tensor:
    return _t_of_int_beta(torch.nn.functional.softplus(phi))     # softplus(v) = log(1 + e^v)


def readout_nodes(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(phi, t): n quadrature nodes evenly spaced in phi(t) (:func:`_phi`) on [T_MIN, 1], in float64.
    Integral of beta / (2 s_t^2) f(t) dt over [T_MIN, 1] = trapezoid of f / 2 over phi (the paper's §3
    integral with phi's change of variables; :class:`MINDE`)."""
    phi = torch.linspace(_phi(T_MIN), _phi(1.0), n, dtype=torch.float64)
    return phi, _t_of_phi(phi).clamp(T_MIN, 1.0)


def training_times(n: int, generator=None, device=None, dtype=torch.float32) -> torch.Tensor:
    """n draws of t on [T_MIN, 1] with density proportional to beta(t) / s_t^2 (:class:`MINDE`), by
    inversion: an antiderivative of beta / (1 - exp(-B(t))) is log(exp(B(t)) - 1), B = int_0^t beta."""
    lo, hi = _phi(T_MIN), _phi(1.0)
    u = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
    t = _t_of_phi(lo + u * (hi - lo))
    return t.clamp(T_MIN, 1.0).to(dtype)


@dataclass(frozen=True)
class MINDESettings(TrainedSettings):
    """``joint`` picks the variant; ``readout_times``: quadrature points of the readout (evenly spaced in
    phi(t), :class:`MINDE`); ``hidden``: the denoiser's width; ``ema``: :data:`EMA` for ``minde-c``
    and 0 for ``minde-j`` unless given (:class:`MINDE`)."""

    hidden: int = 256
    joint: bool = False
    readout_times: int = 64
    ema: float = EMA

    RANGES: ClassVar[dict] = {**TrainedSettings.RANGES, "hidden": (1, float("inf"), True, False),
                              "readout_times": (2, float("inf"), True, False)}


class MINDE(HeldOutEstimator):
    """``minde-c`` / ``minde-j`` (module docstring); settings: :class:`MINDESettings`.

    * ``minde-c`` (conditional): p = p(y|x), q = p(y), averaged over x, is I(X;Y).  One network denoises
      y_t given x or given nothing (x replaced by zeros with a mask flag; dropped with probability 1/2 in
      training, the paper's amortised conditioning); the estimate integrates the squared difference of the
      two denoisers.
    * ``minde-j`` (joint): p = p(x, y), q = p(x) p(y).  One network denoises [x_t, y_t] jointly or either
      part alone (the other masked out), and the estimate integrates
      ||eps_hat_XY(x_t, y_t) - [eps_hat_X(x_t), eps_hat_Y(y_t)]||^2.

    Training is denoising score matching (eps prediction) with t drawn from q(t) proportional to
    beta(t) / s_t^2 on [T_MIN, 1] (:func:`training_times`; the paper's importance sampling, after Huang et
    al. 2021): the readout weighs each t by that same beta / (2 s_t^2), which grows like 1/t near 0, so the
    denoisers must be good at small t.  ``minde-c`` reads out an exponential moving average of the weights
    (``ema`` = 0.995, as the authors' code); ``minde-j`` does not (its average lags behind the joint fit).
    The integral over t is a trapezoid rule on ``readout_times`` points evenly spaced in
    phi(t) = log(exp(int_0^t beta) - 1) on [T_MIN, 1] (:func:`readout_nodes`): d phi = beta / s_t^2 dt, so
    the integral is 1/2 int E||eps_hat_p - eps_hat_q||^2 d phi, a smooth integrand in phi (the change of
    variables behind the paper's importance-sampled Monte Carlo over t), each point averaged over the
    held-out pairs with fresh noise.
    """

    name = "minde-c"
    Settings: ClassVar[type] = MINDESettings

    def __init__(self, **options):
        if options.get("joint") and "ema" not in options:
            options["ema"] = 0.0    # the joint fit's average lags behind it (class docstring)
        super().__init__(**options)
        self.joint = bool(self.settings.joint)
        self.readout_times = self.settings.readout_times
        self.models_x = self.joint
        if self.joint:
            self.name = "minde-j"

    def models(self, dx, dy):
        self._dx = dx
        hidden = self.settings.hidden
        if self.joint:      # input [x_t * m_x, y_t * m_y], context the two mask flags
            return {"denoiser": TimeMLP(dx + dy, 2, dx + dy, hidden)}
        return {"denoiser": TimeMLP(dy, dx + 1, dy, hidden)}    # context [x * m, m]

    def _denoise(self, model, zt, t, x, mask_x, mask_y=None):
        if self.joint:
            dx = self._dx
            masked = torch.cat([zt[:, :dx] * mask_x, zt[:, dx:] * mask_y], 1)
            return model(masked, t, torch.cat([mask_x, mask_y], 1))
        return model(zt, t, torch.cat([x * mask_x, mask_x], 1))

    def loss(self, key, model, x, y):
        gen = None if torch.is_grad_enabled() else torch.Generator(device=x.device).manual_seed(0)
        n = x.shape[0]
        t = training_times(n, gen, x.device, x.dtype)
        a, s = (v.unsqueeze(1) for v in noise_scale(t))
        z0 = torch.cat([x, y], 1) if self.joint else y
        eps = torch.randn(z0.shape, generator=gen, device=x.device, dtype=x.dtype)
        zt = a * z0 + s * eps
        if not self.joint:
            m = (torch.rand(n, 1, generator=gen, device=x.device) < 0.5).to(x.dtype)
            return ((self._denoise(model, zt, t, x, m) - eps) ** 2).sum(1)
        # modes: joint (both parts), x alone, y alone, each a third of the rows; a part left out
        # contributes no loss
        mode = torch.randint(0, 3, (n, 1), generator=gen, device=x.device)
        mx, my = (mode != 2).to(x.dtype), (mode != 1).to(x.dtype)
        err = (self._denoise(model, zt, t, x, mx, my) - eps) ** 2
        dx = self._dx
        return (err[:, :dx] * mx).sum(1) + (err[:, dx:] * my).sum(1)

    def _integrand(self, model, x, y, t_value: float, gen, members: int = 1) -> torch.Tensor:
        """Per held-out pair: ||eps_hat_p - eps_hat_q||^2 / 2 at one t (the integrand over phi; over t it
        is beta(t) / (2 s_t^2) ||eps_hat_p - eps_hat_q||^2).  ``members`` stacked networks (member-major
        rows): each member's rows get the noise its own readout draws (every readout's generator starts
        from the same seed)."""
        n = x.shape[0]
        t = torch.full((n,), t_value, device=x.device, dtype=x.dtype)
        a, s = (v.unsqueeze(1) for v in noise_scale(t))
        ones = torch.ones(n, 1, device=x.device, dtype=x.dtype)
        zeros = torch.zeros(n, 1, device=x.device, dtype=x.dtype)

        def noise(width: int) -> torch.Tensor:
            eps = torch.randn((n // members, width), generator=gen, device=x.device, dtype=x.dtype)
            return eps if members == 1 else eps.repeat(members, 1)

        if self.joint:
            z0 = torch.cat([x, y], 1)
            zt = a * z0 + s * noise(z0.shape[1])
            both = self._denoise(model, zt, t, x, ones, ones)
            dx = self._dx
            alone = torch.cat([self._denoise(model, zt, t, x, ones, zeros)[:, :dx],
                               self._denoise(model, zt, t, x, zeros, ones)[:, dx:]], 1)
            diff = both - alone
        else:
            zt = a * y + s * noise(y.shape[1])
            diff = self._denoise(model, zt, t, x, ones) - self._denoise(model, zt, t, x, zeros)
        return 0.5 * (diff ** 2).sum(1)

    def readout(self, models, x, y):
        return self.readout_members(models, [x], [y])[0]

    def readout_members(self, folds, xs, ys):
        """:meth:`readout` of every member through the stacked denoiser, on their rows folded member-major
        (:meth:`~mibench.estimators.trained_members.MemberTraining.readout_members`); one member is
        :meth:`readout` itself."""
        m, n = len(xs), xs[0].shape[0]
        x, y = (xs[0], ys[0]) if m == 1 else (torch.cat(xs), torch.cat(ys))
        gen = torch.Generator(device=x.device).manual_seed(1)
        # nodes evenly spaced in phi(t), where the weight beta / (2 s^2) dt is d phi / 2: evenly spaced
        # in log s_t^2 with a trapezoid in t, 64 nodes over-read minde-c (the paper's §3 integral; module
        # docstring; docs/estimators.md, MINDE)
        phi, ts = readout_nodes(self.readout_times)
        vals = torch.stack([self._integrand(folds["denoiser"], x, y, float(t), gen, m).double().view(m, n).mean(1)
                            for t in ts])          # (nodes, members)
        return [(float(torch.trapezoid(vals[:, i].contiguous(), phi.to(vals.device))),
                 {"readout_times": self.readout_times}) for i in range(m)]
