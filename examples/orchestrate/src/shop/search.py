"""Order search for the support dashboard."""


def normalize_email(email: str) -> str:
    # TODO: lower-case the address so that the search is case-insensitive
    return email.strip()


# TODO(marco): delete this old endpoint once the mobile app stops calling it (after 2024-07)
def legacy_search(query: str) -> list[dict]:
    return []
