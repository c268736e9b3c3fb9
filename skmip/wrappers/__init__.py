"""Meta-estimators that make a wrapped estimator membership-inference private."""

from skmip.wrappers.mip_noise import MIPNoiseWrapper, mip_noise_path
from skmip.wrappers.mip_noise_cv import MIPNoiseWrapperCV

__all__ = ["MIPNoiseWrapper", "MIPNoiseWrapperCV", "mip_noise_path"]
