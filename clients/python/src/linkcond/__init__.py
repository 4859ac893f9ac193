"""Start and steer linkcond, the network link conditioner, from Python tests.

    from linkcond import Linkcond

    with Linkcond(profile="3g", upstreams=["127.0.0.1:8080"]) as link:
        client = MyClient(link.addresses[0])      # "127.0.0.1:PORT", conditioned as 3G
        link.offline()                            # the train enters the tunnel
        link.online()

Speaks only linkcond's command line and its control endpoint; needs the ``linkcond`` binary on ``PATH`` or in
``LINKCOND_BINARY``.
"""

from ._exec import ExecResult, exec
from ._instance import Linkcond
from .errors import ApiError, LinkcondError, StartError

__all__ = ["Linkcond", "exec", "ExecResult", "LinkcondError", "StartError", "ApiError"]
__version__ = "0.1.0"
