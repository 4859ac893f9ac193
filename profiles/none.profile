# No impairment: traffic passes as if linkcond were not there.
description = No impairment
