from fidelity.cli import main
from fidelity.command_exit import exit_now

exit_now(main())
