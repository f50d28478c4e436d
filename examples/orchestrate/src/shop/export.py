"""Export orders as CSV for accounting."""

import csv


def export_orders(orders: list[dict], path: str) -> None:
    # TODO: open the file with encoding="utf-8"; accented customer names crash the export
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "customer", "total"])
        for order in orders:
            writer.writerow([order["id"], order["customer"], order["total"]])
