"""Information units. Bounds are computed in nats; everything the user sees is in bits (paper §5)."""
import math

LN2 = math.log(2.0)


def nats_to_bits(x):
    return x / LN2


def bits_to_nats(x):
    return x * LN2
