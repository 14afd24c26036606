"""The library version, in its own module so that any module can import it without cycles."""

__version__ = "0.5.0.dev0"
