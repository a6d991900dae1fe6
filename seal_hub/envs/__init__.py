"""Executable tool environments, one package per suite, speaking the records of `protocol`."""
