"""Meta-estimators that make a wrapped estimator membership-inference private."""

from .mip_noise import MIPNoiseWrapper, mip_noise_path

__all__ = ["MIPNoiseWrapper", "mip_noise_path"]
