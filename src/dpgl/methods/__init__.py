"""Method recipes, registered by name (``dpgl methods`` lists them)."""

from dpgl.methods.base import Method, MethodOutput, RunContext, get_method, list_methods, register

__all__ = ["Method", "MethodOutput", "RunContext", "get_method", "list_methods", "register"]
