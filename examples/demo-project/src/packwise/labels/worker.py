"""Label worker: consumes label jobs, buys postage idempotently, sends ZPL to printers."""
