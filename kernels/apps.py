from django.apps import AppConfig


class KernelsConfig(AppConfig):
    name = "kernels"
    verbose_name = "Kernels"
