"""tlpsim: performance model and simulator of PCI Express fabrics.

Public API (names fixed by DESIGN.md):

- :func:`link_bandwidth` - closed-form bandwidth of one link, per direction.
- :func:`message_bandwidth` - payload rate of messages segmented into TLPs.
- :func:`validate` - every modelled seed-report number, published vs computed.
"""

from tlpsim._core import ConfigError
from tlpsim.link import LinkBandwidth, MessageBandwidth, link_bandwidth, message_bandwidth
from tlpsim.validation import ValidationReport, validate

__all__ = [
    "ConfigError",
    "LinkBandwidth",
    "MessageBandwidth",
    "ValidationReport",
    "link_bandwidth",
    "message_bandwidth",
    "validate",
]
__version__ = "0.1.0"
