from pathlib import Path

import pytest

# The support modules beside the tests (tests/builders.py, tests/notify/channels.py, ...) hold asserts too: pytest
# rewrites them as it does the test modules', so that a failing one shows its values.
_HERE = Path(__file__).parent
pytest.register_assert_rewrite(
    *(
        ".".join(("tests", *path.relative_to(_HERE).with_suffix("").parts))
        for path in _HERE.rglob("*.py")
        if not path.name.startswith(("test_", "conftest", "__init__"))
    )
)
