"""TRACE: accountable source discovery over noisy historical collections."""

__version__ = "0.1.0"
