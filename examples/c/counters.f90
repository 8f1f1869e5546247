! The counters example in Fortran through ISO_C_BINDING: the page faults
! of touching N fresh pages (mapped with mmap, one minor fault per first
! touch), read with pmx_counters_read into pmx_count records.
! Usage: counters_f90 [N] (default 100). Prints, per event:
!   <name> value=<raw>
!
! Build: gfortran examples/c/counters.f90 target/release/libpmx.a -lpthread -ldl -lm
module pmx
  use iso_c_binding
  implicit none
  ! struct pmx_count of pmx.h (uint64_t read as int64: counts fit).
  type, bind(c) :: pmx_count
    integer(c_int64_t) :: value, enabled, running
    real(c_double) :: scaled
  end type
  interface
    type(c_ptr) function pmx_counters_open(events, pid, cpu) bind(c)
      import :: c_ptr, c_char, c_int
      character(kind=c_char), dimension(*) :: events
      integer(c_int), value :: pid, cpu
    end function
    integer(c_int) function pmx_counters_enable(c) bind(c)
      import :: c_ptr, c_int
      type(c_ptr), value :: c
    end function
    integer(c_int) function pmx_counters_disable(c) bind(c)
      import :: c_ptr, c_int
      type(c_ptr), value :: c
    end function
    integer(c_int) function pmx_counters_read(c, out, n) bind(c)
      import :: c_ptr, c_int, pmx_count
      type(c_ptr), value :: c
      type(pmx_count), dimension(*) :: out
      integer(c_int), value :: n
    end function
    integer(c_int) function pmx_counters_count(c) bind(c)
      import :: c_ptr, c_int
      type(c_ptr), value :: c
    end function
    type(c_ptr) function pmx_counters_name(c, i) bind(c)
      import :: c_ptr, c_int
      type(c_ptr), value :: c
      integer(c_int), value :: i
    end function
    subroutine pmx_counters_close(c) bind(c)
      import :: c_ptr
      type(c_ptr), value :: c
    end subroutine
    type(c_ptr) function pmx_last_error() bind(c)
      import :: c_ptr
    end function
    ! libc, for pages nobody touched yet.
    type(c_ptr) function mmap(addr, length, prot, flags, fd, offset) bind(c)
      import :: c_ptr, c_size_t, c_int, c_long
      type(c_ptr), value :: addr
      integer(c_size_t), value :: length
      integer(c_int), value :: prot, flags, fd
      integer(c_long), value :: offset
    end function
    integer(c_int) function madvise(addr, length, advice) bind(c)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: addr
      integer(c_size_t), value :: length
      integer(c_int), value :: advice
    end function
    integer(c_int) function munmap(addr, length) bind(c)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: addr
      integer(c_size_t), value :: length
    end function
  end interface
contains
  ! A C string as a Fortran string.
  function c_text(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: n
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    call c_f_pointer(p, chars, [4096])
    n = 0
    do while (chars(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate (character(len=n) :: s)
    s = transfer(chars(1:n), s)
  end function
end module

program counters
  use pmx
  implicit none
  integer(c_long) :: n
  character(len=32) :: arg
  n = 100
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  ! Everything once before, so the code and stack pages are there.
  call count(1_c_long, .false.)
  call count(n, .true.)
contains
  subroutine touch_pages(pages)
    integer(c_long), intent(in) :: pages
    integer(c_size_t), parameter :: page = 4096
    integer(c_int), parameter :: rw = 3, private_anonymous = 34, nohugepage = 15
    type(c_ptr) :: m
    integer(c_int8_t), pointer :: bytes(:)
    integer(c_size_t) :: length
    integer(c_long) :: i
    length = page * pages
    m = mmap(c_null_ptr, length, rw, private_anonymous, -1_c_int, 0_c_long)
    call c_f_pointer(m, bytes, [length])
    i = madvise(m, length, nohugepage)
    do i = 0, pages - 1
      bytes(i * page + 1) = 1
    end do
    i = munmap(m, length)
  end subroutine

  subroutine count(pages, print)
    integer(c_long), intent(in) :: pages
    logical, intent(in) :: print
    type(c_ptr) :: c
    type(pmx_count) :: v(8)
    integer(c_int) :: k, i
    c = pmx_counters_open('page-faults,task-clock'//c_null_char, 0_c_int, -1_c_int)
    if (.not. c_associated(c)) then
      write (0, '(a)') 'pmx_counters_open: '//c_text(pmx_last_error())
      stop 1
    end if
    k = pmx_counters_count(c)
    if (pmx_counters_enable(c) /= 0) stop 1
    call touch_pages(pages)
    if (pmx_counters_disable(c) /= 0) stop 1
    if (pmx_counters_read(c, v, 8_c_int) /= k) then
      write (0, '(a)') 'pmx_counters_read: '//c_text(pmx_last_error())
      stop 1
    end if
    do i = 1, k
      if (print) write (*, '(a, " value=", i0)') c_text(pmx_counters_name(c, i - 1)), v(i)%value
    end do
    call pmx_counters_close(c)
  end subroutine
end program
